// SPDX-License-Identifier: MIT
// neuron-top's data: snapshots of the driver's counters and what the screen
// and the batch output show, computed from two of them.
#pragma once

#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <vector>

#include "neuron_tools/device.hpp"
#include "neuron_tools/process.hpp"

namespace neuron::tools::top {

/// Everything read at one instant.
struct Snapshot {
    uint64_t mono_ns = 0; ///< CLOCK_MONOTONIC when taken
    int64_t wall_s = 0;   ///< time of day (seconds since the epoch) when taken
    Driver driver;
    std::vector<Device> devices;
    ProcessScan processes;
};

Snapshot take_snapshot(const Roots &roots);

/// Something that happened to a device: a reset, a hang, an error.
struct Event {
    int64_t wall_s = 0;
    unsigned device = 0; ///< N of accelN
    int core = -1;       ///< -1: the whole device
    std::string kind;    ///< reset, hang, error, fatal, fault, timeout, state
    std::string detail;  ///< e.g. "ready -> resetting", "3 jobs"
    std::string source;  ///< netlink or counters
};

struct CoreView {
    unsigned index = 0;
    double util = 0; ///< 0..1: busy time / wall time over the interval
    double jobs_per_s = 0;
    uint64_t faults = 0; ///< totals since the driver bound
    uint64_t timeouts = 0;
    uint64_t resets = 0;
};

struct DeviceView {
    unsigned index = 0;
    std::string name;
    std::string bdf;
    std::string state;
    std::optional<uint64_t> memory_used;
    std::optional<uint64_t> memory_total;
    double dma_bytes_per_s = 0; ///< all DMA engines
    double jobs_per_s = 0;      ///< all cores
    uint64_t reset_count = 0;
    std::vector<CoreView> cores;
};

struct ProcessView {
    int pid = 0;
    std::string command;
    unsigned device = 0;
    std::string device_name; ///< accelN, or sim
    uint64_t memory = 0;     ///< device memory, bytes
    uint64_t host_memory = 0;
    double util = 0; ///< busy time of its jobs / wall time (1.0 = one core)
    std::vector<unsigned> cores;
};

struct Model {
    int64_t wall_s = 0;
    double interval_s = 0; ///< between the two snapshots
    std::string driver_version;
    std::vector<DeviceView> devices;
    std::vector<ProcessView> processes; ///< one row per (process, device)
    unsigned hidden_processes = 0;
    std::deque<Event> events; ///< newest last
    std::string event_source; ///< what the status line says about events
};

/// Rates over the interval between two snapshots.
Model compute(const Snapshot &prev, const Snapshot &cur);

/// Events visible in the counters between two snapshots. Resets, timeouts
/// and state changes only with `resets` (when netlink does not report
/// them); job faults always (netlink has no event for them).
std::vector<Event> counter_events(const Snapshot &prev, const Snapshot &cur, bool resets);

/// Keeps the newest `max` events.
void add_events(std::deque<Event> &events, const std::vector<Event> &more, size_t max = 100);

} // namespace neuron::tools::top
