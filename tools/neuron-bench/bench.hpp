// SPDX-License-Identifier: MIT
// neuron-bench: what every section shares. A section measures figures
// (each a median over repeated runs, with min and max) into the cells of
// a table; ratio columns are computed from medians of the same run.
#pragma once

#include <neuron/device.hpp>

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

#include <neuron/neuron.hpp>

namespace nbench {

/// Median, min and max of repeated runs of one figure.
struct Stats {
    double median = 0;
    double min = 0;
    double max = 0;
    unsigned runs = 0;
    /// Throws std::invalid_argument for an empty set.
    static Stats of(std::vector<double> values);
};

/// Runs @p once @p repeat times (after one unmeasured warm-up run when
/// @p warm_up) and summarizes what it returns.
Stats repeat_runs(unsigned repeat, const std::function<double()> &once, bool warm_up = true);

/// A figure by the column it fills, and how to measure it once.
struct Figure {
    std::string column;
    std::function<double()> once;
};
/// Each figure's values, round by round, by column.
using Rounds = std::map<std::string, std::vector<double>>;

/// Runs every figure of @p figures once per round, in turn, for one
/// unmeasured warm-up round and then @p repeat measured rounds, so that a
/// figure and its peer see the same drift of the machine (the guest CPU's
/// speed moves between and within processes).
Rounds interleaved_rounds(unsigned repeat, const std::vector<Figure> &figures);

/// The driver resets a core whose job runs longer than its job_timeout_ms
/// (module parameter; 5 s when it cannot be read).
double job_timeout_s();

/// Seconds since an arbitrary epoch, monotonic.
inline double now_s() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
        .count();
}

/// One table of the report: named rows (in insertion order) by columns.
/// A column is either measured (cells hold Stats in the table's unit, or
/// the column's own) or a ratio of two measured columns' medians.
class Table {
  public:
    struct Column {
        std::string name;
        std::string unit;        ///< measured columns
        std::string numerator;   ///< ratio columns
        std::string denominator; ///< ratio columns
        bool is_ratio() const { return !numerator.empty(); }
    };

    Table(std::string id, std::string title, std::string row_heading);

    /// A measured column; @p unit e.g. "MiB/s", "us", "GFLOP/s".
    Table &column(const std::string &name, const std::string &unit);
    /// A column of median(numerator) / median(denominator), row by row.
    Table &ratio(const std::string &name, const std::string &numerator,
                 const std::string &denominator);
    /// A line printed under the table and kept in the JSON ("how measured").
    Table &note(std::string text);

    void set(const std::string &row, const std::string &column, const Stats &s);
    /// The column's cell from its values in @p rounds, or skipped for
    /// @p why_not when the figure was not measured.
    void set(const std::string &row, const std::string &column, const Rounds &rounds,
             const std::string &why_not);
    /// A measured column of numerator / denominator taken round by round
    /// (the spread of the ratio itself), or skipped for @p why_not.
    void set_ratio_by_round(const std::string &row, const std::string &column, const Rounds &rounds,
                            const std::string &numerator, const std::string &denominator,
                            const std::string &why_not);
    /// A cell that could not be measured, with the reason (printed as "-").
    void skip(const std::string &row, const std::string &column, std::string reason);
    std::optional<Stats> get(const std::string &row, const std::string &column) const;
    std::optional<double> ratio_value(const std::string &row, const Column &c) const;

    size_t skipped() const { return skipped_.size(); }
    const std::string &id() const { return id_; }
    const std::string &title() const { return title_; }
    std::string render() const;
    nlohmann::json to_json() const;

  private:
    const Column &find_column(const std::string &name) const;
    std::string id_, title_, row_heading_;
    std::vector<Column> columns_;
    std::vector<std::string> rows_;
    std::map<std::pair<std::string, std::string>, Stats> cells_;
    std::map<std::pair<std::string, std::string>, std::string> skipped_;
    std::vector<std::string> notes_;
};

/// Every table of a run plus what describes the run.
class Report {
  public:
    /// The table with @p id, created on first use.
    Table &table(const std::string &id, const std::string &title, const std::string &row_heading);
    Table *find(const std::string &id);
    nlohmann::json &context() { return context_; }
    size_t skipped() const; ///< cells that could not be measured, in every table
    std::string render() const;
    nlohmann::json to_json() const;

  private:
    std::deque<Table> tables_; // sections keep references to their tables
    nlohmann::json context_ = nlohmann::json::object();
};

/// What the command line chose.
struct Options {
    bool quick = false;              ///< short sizes and few repeats (the CTest run)
    unsigned repeat = 5;             ///< measured runs per figure
    std::string device;              ///< -d as given ("" = not given)
    neuron::DeviceSelector selector; ///< -d, else $NEURON_DEVICE
    std::string nvme;                ///< peer block device ("" = none)
    uint64_t min_copy = 4096;
    uint64_t max_copy = 256u << 20;
    unsigned max_depth = 64;
    std::vector<std::string> sections; ///< empty = all
    std::string host_figures;          ///< JSON from a host-side run (compute limits)
    bool no_device = false;            ///< measure only what runs without a device
    bool wants(const std::string &section) const;
};

/// The device the options name; nullopt with --no-device or when the
/// driver has none.
std::optional<neuron::Device> open_device(const Options &o);

/// Submissions per second of @p count calls of @p submit (given the call's
/// index) with at most @p depth in flight: when the window is full, the
/// oldest fence is waited for; the last ones are drained before the clock
/// stops.
double rate_in_flight(unsigned depth, unsigned count,
                      const std::function<neuron::Fence(unsigned)> &submit);

/// Copy sizes min_copy .. max_copy, x4 apart (x16 in quick mode).
std::vector<uint64_t> copy_sizes(const Options &o);
/// "4 KiB", "256 MiB".
std::string size_label(uint64_t bytes);

// The sections. Each adds its tables to the report; a figure that cannot
// be measured here (no device, no peer) is skipped with its reason.
void run_dma(const Options &o, Report &r);
void run_submit(const Options &o, Report &r);
void run_compute(const Options &o, Report &r);
/// The compute section's split table: a compiled graph over every core.
void run_compute_split(const Options &o, const neuron::Device &dev, Report &r);
void run_alloc(const Options &o, Report &r);
void run_e2e(const Options &o, Report &r);
/// Collectives over simulated devices of this process (whatever -d names).
void run_collectives(const Options &o, Report &r);

} // namespace nbench
