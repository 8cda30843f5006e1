// SPDX-License-Identifier: MIT
// End to end: the example models (examples/) run as a user would run
// them: per-run latency one at a time, and throughput with many runs in
// flight spread over every core.
#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <stdexcept>

#include <unistd.h>

#include <fmt/format.h>

#include <neuron/neuron.hpp>

#include "bench.hpp"
#include "common/example.hpp"
#include "common/linear_gelu.hpp"
#include "common/transformer_block.hpp"

namespace nbench {

namespace {

/// One example loaded on a device, with its inputs uploaded and one
/// output buffer per run that may be in flight.
class LoadedExample {
  public:
    LoadedExample(const neuron::Device &dev, const nex::Case &c, unsigned slots)
        : case_(c), program_(dev.load(c.program)) {
        const auto region =
            dev.info().device_memory_size ? neuron::Region::device : neuron::Region::host;
        for (const auto &[name, bytes] : c.inputs) {
            inputs_.push_back(dev.allocate(bytes.size(), region));
            inputs_.back().write(0, bytes);
            base_.bind(name, inputs_.back().range(0, bytes.size()));
        }
        out_size_ = nex::argument_size(c.program, c.output);
        for (unsigned i = 0; i < slots; i++)
            outputs_.push_back(dev.allocate(out_size_, region));
        for (unsigned q = 0; q < dev.info().num_cores; q++)
            queues_.push_back(dev.queue(q));
    }

    /// Runs once on core 0 and checks the output against the reference:
    /// a wrong result is no benchmark figure.
    void check() const {
        submit(0, 0).wait();
        std::vector<std::byte> out(out_size_);
        outputs_[0].read(0, out);
        const auto e = nex::check(case_, out);
        if (!e.ok())
            throw std::runtime_error(fmt::format("{}: output beyond tolerance: {}", case_.title,
                                                 nex::describe(e, case_.tolerance)));
    }

    neuron::Fence submit(unsigned slot, unsigned core) const {
        neuron::Arguments args = base_;
        args.bind(case_.output, outputs_[slot].range(0, out_size_));
        return queues_[core % queues_.size()].submit(program_, args);
    }

    /// One run on core 0 into output slot 0, profiled into @p prof.
    neuron::Fence submit(const neuron::Profile &prof) const {
        neuron::Arguments args = base_;
        args.bind(case_.output, outputs_[0].range(0, out_size_));
        return queues_[0].submit(program_, args, prof);
    }

    /// Output slot 0's bytes.
    std::vector<std::byte> output() const {
        std::vector<std::byte> out(out_size_);
        outputs_[0].read(0, out);
        return out;
    }

    unsigned cores() const { return static_cast<unsigned>(queues_.size()); }

  private:
    const nex::Case &case_;
    neuron::LoadedProgram program_;
    std::vector<neuron::Buffer> inputs_;
    std::vector<neuron::Buffer> outputs_;
    std::vector<neuron::Queue> queues_;
    neuron::Arguments base_;
    uint64_t out_size_ = 0;
};

/// Runs per figure: 48 (8 with --quick), fewer for a model whose one run
/// takes @p once_s seconds or more, so that a figure takes about 2 s.
unsigned runs_for(const Options &o, double once_s) {
    const unsigned most = o.quick ? 8 : 48;
    const double fit = 2.0 / std::max(once_s, 1e-6);
    return std::clamp(static_cast<unsigned>(fit) / 4 * 4, 8u, most);
}

/// Runs per second with @p depth in flight, round robin over the cores.
double throughput(const LoadedExample &ex, unsigned depth, unsigned runs) {
    return rate_in_flight(depth, runs, [&](unsigned i) { return ex.submit(i % depth, i); });
}

/// A device opened with $NEURON_PROFILE set to @p file: every job
/// submitted through it is profiled into the file.
std::optional<neuron::Device> open_capturing(const Options &o, const std::string &file) {
    const char *old = std::getenv(neuron::ntrace::env_file);
    const std::string saved = old ? old : "";
    ::setenv(neuron::ntrace::env_file, file.c_str(), 1);
    auto dev = open_device(o);
    if (old)
        ::setenv(neuron::ntrace::env_file, saved.c_str(), 1);
    else
        ::unsetenv(neuron::ntrace::env_file);
    return dev;
}

/// Profiling's cost on one example: one run at a time, with profiling off,
/// off again (the run's noise floor), into a Profile, and captured by
/// $NEURON_PROFILE into a file; the four interleaved run by run, in an
/// order that rotates, so that load drift falls on all alike.
void profile_cost(const Options &o, const neuron::Device &dev, const nex::Case &c, Table &t,
                  const std::string &row) {
    const std::string file = fmt::format("/tmp/neuron-bench-e2e-{}-{}.ntrace", ::getpid(),
                                         std::hash<std::string>{}(row));
    std::remove(file.c_str());
    auto cap_dev = open_capturing(o, file);
    LoadedExample off(dev, c, 1), cap(*cap_dev, c, 1);
    const neuron::Profile prof(dev);
    off.check();
    const auto want = off.output();
    // The same results: bit for bit.
    off.submit(prof).wait();
    if (off.output() != want)
        throw std::runtime_error(c.title + ": a profiled run's output differs from an unprofiled "
                                           "one's");
    const double checked_at = now_s();
    cap.check();
    if (cap.output() != want)
        throw std::runtime_error(c.title + ": a captured run's output differs from an unprofiled "
                                           "one's");
    const unsigned runs = o.quick ? 2 : runs_for(o, now_s() - checked_at) / 4;
    std::array<std::vector<double>, 4> ms;
    auto once = [&](unsigned variant) {
        const double t0 = now_s();
        for (unsigned i = 0; i < runs; i++) {
            if (variant == 2)
                off.submit(prof).wait();
            else if (variant == 3)
                cap.submit(0, 0).wait(); // the fence goes here: its trace is written
            else
                off.submit(0, 0).wait();
        }
        return (now_s() - t0) / runs * 1e3;
    };
    for (unsigned v = 0; v < 4; v++)
        once(v); // warm up
    const unsigned repeat = std::max(o.repeat, 1u);
    for (unsigned r = 0; r < repeat; r++)
        for (unsigned k = 0; k < 4; k++) {
            const unsigned v = (r + k) % 4;
            ms[v].push_back(once(v));
        }
    t.set(row, "off", Stats::of(ms[0]));
    t.set(row, "off again", Stats::of(ms[1]));
    t.set(row, "Profile", Stats::of(ms[2]));
    t.set(row, "captured", Stats::of(ms[3]));
    const auto jobs = neuron::ntrace::read(file);
    const uint64_t bytes = std::filesystem::file_size(file);
    t.note(fmt::format("{}: {} captured jobs in a {}-byte .ntrace file ({} bytes per job)", row,
                       jobs.size(), bytes, jobs.empty() ? 0 : bytes / jobs.size()));
    std::remove(file.c_str());
}

} // namespace

void run_e2e(const Options &o, Report &r) {
    const unsigned depth = 16;
    Table &t = r.table("e2e", "Example models, inputs resident on the device", "model");
    const std::string deep = fmt::format("{} in flight", depth);
    t.column("latency", "ms").column("one at a time", "1/s").column(deep, "1/s");
    t.ratio("in flight/one", deep, "one at a time");
    t.note(fmt::format("Latency: one run at a time on core 0, submit to fence (its inverse is "
                       "the one-at-a-time rate). {}: round robin over all cores, each run with "
                       "its own output buffer. A figure is 48 runs, fewer (at least 8) for a "
                       "model whose run takes more than 2/48 s. 'compiled': the program built "
                       "by neuron::compiler from the model's graph.",
                       deep));
    struct Model {
        std::string name;
        std::function<nex::Case()> make;
    };
    const std::vector<Model> models = {
        {"Linear+GELU fp32", [] { return nex::linear_gelu_case(neuron::DType::fp32); }},
        {"Linear+GELU bf16", [] { return nex::linear_gelu_case(neuron::DType::bf16); }},
        {"Linear+GELU fp32 compiled",
         [] { return nex::compiled_linear_gelu_case(neuron::DType::fp32); }},
        {"Linear+GELU bf16 compiled",
         [] { return nex::compiled_linear_gelu_case(neuron::DType::bf16); }},
        {"transformer block fp32", [] { return nex::transformer_block_case(); }},
        {"transformer block fp32 compiled", [] { return nex::compiled_transformer_block_case(); }},
        {"encoder 768 (BERT-base) fp32 compiled", [] { return nex::encoder_768_case(); }},
    };
    auto dev = open_device(o);
    for (const auto &m : models) {
        if (!dev) {
            for (const std::string &col :
                 {std::string("latency"), std::string("one at a time"), deep})
                t.skip(m.name, col, "no neuron device");
            continue;
        }
        const nex::Case c = m.make();
        LoadedExample ex(*dev, c, depth);
        const double checked_at = now_s();
        ex.check();
        const unsigned runs = runs_for(o, now_s() - checked_at);
        const Stats latency = repeat_runs(o.repeat, [&] {
            const double t0 = now_s();
            for (unsigned i = 0; i < runs / 4; i++)
                ex.submit(0, 0).wait();
            return (now_s() - t0) / (runs / 4) * 1e3;
        });
        const Stats rate = repeat_runs(o.repeat, [&] { return throughput(ex, depth, runs); });
        t.set(m.name, "latency", latency);
        // The inverse is monotonic: the slowest run gives the lowest rate.
        t.set(m.name, "one at a time",
              Stats{1e3 / latency.median, 1e3 / latency.max, 1e3 / latency.min, latency.runs});
        t.set(m.name, deep, rate);
    }

    // The compiled programs next to the hand-written ones: the two runs
    // alternate one by one (which goes first rotates), so that the load of
    // a shared machine falls on both alike.
    Table &cmp =
        r.table("e2e-compiled",
                "Compiled programs next to the hand-written ones, one run at a time", "model");
    cmp.column("hand-written", "ms").column("compiled", "ms");
    cmp.ratio("compiled/hand-written", "compiled", "hand-written");
    cmp.note("Submit to fence on core 0, per run, the same data and check for both programs; "
             "a hand-written and a compiled run alternate, the first of each pair rotating, "
             "12 pairs a round (2 with --quick).");
    struct Pair {
        std::string name;
        std::function<nex::Case()> hand, compiled;
    };
    const std::vector<Pair> pairs = {
        {"Linear+GELU fp32", [] { return nex::linear_gelu_case(neuron::DType::fp32); },
         [] { return nex::compiled_linear_gelu_case(neuron::DType::fp32); }},
        {"Linear+GELU bf16", [] { return nex::linear_gelu_case(neuron::DType::bf16); },
         [] { return nex::compiled_linear_gelu_case(neuron::DType::bf16); }},
        {"transformer block fp32", [] { return nex::transformer_block_case(); },
         [] { return nex::compiled_transformer_block_case(); }},
    };
    for (const auto &pair : pairs) {
        if (!dev) {
            for (const char *col : {"hand-written", "compiled"})
                cmp.skip(pair.name, col, "no neuron device");
            continue;
        }
        const nex::Case hc = pair.hand(), cc = pair.compiled();
        const LoadedExample hand(*dev, hc, 1), comp(*dev, cc, 1);
        hand.check();
        comp.check();
        const unsigned runs = o.quick ? 2 : 12;
        auto round = [&](std::array<std::vector<double>, 2> *ms) {
            std::array<double, 2> sum{};
            for (unsigned i = 0; i < runs; i++)
                for (unsigned k = 0; k < 2; k++) {
                    const unsigned v = (i + k) % 2;
                    const double t0 = now_s();
                    (v ? comp : hand).submit(0, 0).wait();
                    sum[v] += now_s() - t0;
                }
            if (ms)
                for (unsigned v = 0; v < 2; v++)
                    (*ms)[v].push_back(sum[v] / runs * 1e3);
        };
        round(nullptr); // warm up
        std::array<std::vector<double>, 2> ms;
        for (unsigned rep = 0; rep < std::max(o.repeat, 1u); rep++)
            round(&ms);
        cmp.set(pair.name, "hand-written", Stats::of(ms[0]));
        cmp.set(pair.name, "compiled", Stats::of(ms[1]));
    }

    Table &p =
        r.table("e2e-profile", "Profiling's cost, example models one run at a time", "model");
    p.column("off", "ms")
        .column("off again", "ms")
        .column("Profile", "ms")
        .column("captured", "ms");
    p.ratio("again/off", "off again", "off")
        .ratio("Profile/off", "Profile", "off")
        .ratio("captured/off", "captured", "off");
    p.note("Submit to fence on core 0, per run. off: unprofiled; off again: the same, a second "
           "time (the noise floor of the run); Profile: into a neuron::Profile allocated once; "
           "captured: through a device opened with $NEURON_PROFILE, the trace appended to a file "
           "when the fence is released. The four are interleaved run by run in a rotating "
           "order; profiled outputs are checked bit for bit against the unprofiled one.");
    for (const auto &m : models) {
        if (m.name.find("bf16") != std::string::npos)
            continue; // the fp32 rows cover the same paths
        if (!dev || !dev->info().has(neuron::cap_profile)) {
            for (const char *col : {"off", "off again", "Profile", "captured"})
                p.skip(m.name, col, dev ? "the device cannot profile" : "no neuron device");
            continue;
        }
        profile_cost(o, *dev, m.make(), p, m.name);
    }
}

} // namespace nbench
