// SPDX-License-Identifier: MIT
// neuron-profile on the simulator: the summary of a profiled job against
// the job's own figures (its cycles, the core's instruction and DMA byte
// counters); capture, view and export of an example program end to end,
// the export checked against the Trace Event format; broken .ntrace files.
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <neuron/compiler/compile.hpp>
#include <neuron/compiler/text.hpp>
#include <neuron/neuron.hpp>

#include "device_state.hpp"
#include "neuron_isa.h"
#include "profile.hpp"
#include "relu_program.hpp"
#include "test_support.hpp"
#include "trace_event_check.hpp"

// cmocka last: it defines macros (fail, ...) that clash with C++ headers.
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

extern "C" {
#include <cmocka.h>
}

namespace {

namespace fs = std::filesystem;
using namespace neuron;

struct Run {
    int status = -1;
    std::string out; ///< stdout
    std::string err; ///< stderr
};

fs::path scratch(const std::string &name) {
    return fs::temp_directory_path() / fmt::format("neuron-profile-test-{}-{}", ::getpid(), name);
}

/// Runs @p cmd through the shell with stdout and stderr captured.
Run run(const std::string &cmd) {
    fs::path o = scratch("stdout"), e = scratch("stderr");
    Run r;
    int st = std::system(fmt::format("{} >'{}' 2>'{}'", cmd, o.string(), e.string()).c_str());
    r.status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
    r.out = support::slurp(o);
    r.err = support::slurp(e);
    fs::remove(o);
    fs::remove(e);
    return r;
}

uint64_t core_counter(const Device &d, const char *name) {
    const auto &s = *d.state();
    std::string v = s.os->read_line(s.telemetry_dir + "core0/" + name);
    assert_false(v.empty());
    return std::stoull(v);
}

bool contains(const std::string &hay, const std::string &needle) {
    if (hay.find(needle) != std::string::npos)
        return true;
    std::fprintf(stderr, "'%s' not found in:\n%s\n", needle.c_str(), hay.c_str());
    return false;
}

void write_file(const fs::path &p, std::span<const std::byte> b) {
    std::ofstream(p, std::ios::binary)
        .write(reinterpret_cast<const char *>(b.data()), static_cast<std::streamsize>(b.size()));
}

/// A profiled relu job on the simulator, with the core's counters around it.
struct Profiled {
    ntrace::Job job;
    uint64_t instructions = 0, dma_bytes = 0;
};

Profiled profile_relu(uint32_t n, uint64_t records = Profile::default_records) {
    Device d = Device::open("sim");
    ProgramBuilder b("relu2x1");
    test::add_relu2x1(b, n);
    LoadedProgram lp = d.load(b.finish());
    Buffer x = d.allocate(128 * n * 4), y = d.allocate(128 * n * 4);
    Profile prof(d, records);
    uint64_t i0 = core_counter(d, "instructions"), b0 = core_counter(d, "dma_bytes");
    Fence f = d.queue(0).submit(lp, Arguments().bind("x", x).bind("y", y), prof);
    f.wait();
    Profiled p{ntrace::Job(lp.program())};
    p.instructions = core_counter(d, "instructions") - i0;
    p.dma_bytes = core_counter(d, "dma_bytes") - b0;
    p.job.core = 0;
    p.job.seqno = f.seqno();
    p.job.clock_mhz = d.info().core_clock_mhz;
    p.job.partitions = d.info().partitions;
    p.job.sbuf_size = d.info().sbuf_size;
    p.job.psum_size = d.info().psum_size;
    p.job.trace = prof.bytes();
    return p;
}

/// The job of a compiled graph, profiled on the simulator (inputs zero).
ntrace::Job profile_compiled(const Program &prog) {
    Device d = Device::open("sim");
    LoadedProgram lp = d.load(prog);
    Arguments args;
    std::deque<Buffer> bufs; // stable: the arguments point at them
    for (const auto &a : prog.arguments())
        if (a.direction != Direction::constant) {
            bufs.push_back(d.allocate(a.size));
            std::vector<std::byte> zero(a.size);
            bufs.back().write(0, zero);
            args.bind(a.name, bufs.back());
        }
    Profile prof(d);
    Fence f = d.queue(0).submit(lp, args, prof);
    f.wait();
    ntrace::Job j(prog);
    j.seqno = f.seqno();
    j.clock_mhz = d.info().core_clock_mhz;
    j.partitions = d.info().partitions;
    j.sbuf_size = d.info().sbuf_size;
    j.psum_size = d.info().psum_size;
    j.trace = prof.bytes();
    return j;
}

} // namespace

// A compiled graph's profile names its nodes: every instruction but the
// streams' ENDs belongs to one, the nodes' cycles on each engine and the
// engine's idle time add up to the job's cycles, and the export names each
// slice by its node.
static void compiled_graph_names_its_nodes(void **) {
    using namespace neuron::compiler;
    Graph g = compiler::parse("graph attn\n"
                              "input q: fp32[77, 64]\n"
                              "input k: fp32[129, 64]\n"
                              "input v: fp32[129, 127]\n"
                              "scores = matmul(q, k, transpose_b=true)\n"
                              "scaled = mul(scores, 0.125)\n"
                              "probs = softmax(scaled)\n"
                              "out = matmul(probs, v)\n"
                              "output out\n");
    Compiled c = compile(g);
    assert_false(c.program.origins().empty());
    assert_int_equal(c.program.version_minor(), 2); // ORIGINS and LIVE
    ntrace::Job job = profile_compiled(c.program);
    nprof::JobSummary s = nprof::summarize(job, 0);
    const Trace &t = s.trace;
    assert_int_equal(t.status, 0); // NEURON_JOB_STATUS_OK
    assert_false(s.nodes.empty());
    std::map<std::string, const nprof::NodeTime *> by;
    for (const auto &n : s.nodes)
        by[n.name] = &n;
    // The matmul with its fused scale, the softmax, the second matmul.
    for (const char *name : {"scores+scaled", "probs", "out"}) {
        if (!by.count(name))
            fail_msg("no node '%s' in the summary", name);
        assert_true(by[name]->busy > 0);
    }
    uint64_t insns = 0, busy = 0, waiting = 0;
    std::array<uint64_t, 4> per_engine{};
    for (const auto &n : s.nodes) {
        insns += n.instructions;
        busy += n.busy;
        waiting += n.waiting;
        for (size_t e = 0; e < 4; e++)
            per_engine[e] += n.cycles[e];
    }
    assert_int_equal(insns, t.records.size());
    for (size_t e = 0; e < 4; e++) {
        assert_int_equal(per_engine[e] + s.engines[e].idle, t.cycles);
        busy -= s.engines[e].busy;
        waiting -= s.engines[e].waiting;
    }
    assert_int_equal(busy, 0);
    assert_int_equal(waiting, 0);
    // Only the ENDs the builder adds are nobody's.
    const Program &prog = job.program;
    size_t ends = 0;
    for (const auto &r : t.records)
        if (!prog.origin(r.engine, r.index)) {
            assert_int_equal(r.opcode, NEURON_OP_END);
            ends++;
        }
    // ... and they are: each stream's END, after its last node's range.
    size_t end_records = 0;
    for (const auto &r : t.records)
        end_records += r.opcode == NEURON_OP_END;
    assert_int_equal(ends, end_records);
    assert_true(by.count("(no node)") == 1);
    assert_int_equal(by["(no node)"]->instructions, ends);

    std::string v = nprof::render_view({s});
    assert_true(contains(v, "by graph node"));
    assert_true(contains(v, "] matmul psum"));
    for (const auto &n : s.nodes)
        assert_true(contains(v, fmt::format("    {:<13} {:>6}", n.name, n.instructions)));
    auto doc = nprof::export_chrome({job});
    std::string problems = trace_check::check(doc);
    if (!problems.empty())
        fail_msg("the export is not a valid trace:\n%s", problems.c_str());
    size_t named = 0;
    for (const auto &ev : doc["traceEvents"])
        if (ev["ph"] == "X" && ev["args"].contains("node")) {
            assert_true(ev["name"].get<std::string>().starts_with(
                ev["args"]["node"].get<std::string>() + ": "));
            named++;
        }
    assert_int_equal(named, t.records.size() - ends);

    // The SVG timeline, parsed by Python's XML parser: a box per record, an
    // arrow per released wait, the two counters, the nodes in the legend.
    fs::path file = scratch("graph.ntrace"), svg = scratch("graph.svg");
    fs::remove(file);
    ntrace::append(file, job);
    Run e = run(fmt::format("'{}' export --format svg '{}'", NEURON_PROFILE_BIN, file.string()));
    assert_int_equal(e.status, 0);
    std::ofstream(svg) << e.out;
    Run py = run(fmt::format(
        "/usr/bin/python3 -c 'import sys, xml.etree.ElementTree as E\n"
        "r = E.parse(sys.argv[1]).getroot()\n"
        "n = lambda tag, c: sum(1 for x in r.iter(\"{{http://www.w3.org/2000/svg}}\" + tag)"
        " if x.get(\"class\") == c)\n"
        "t = [x.text for x in r.iter(\"{{http://www.w3.org/2000/svg}}text\")]\n"
        "print(n(\"rect\", \"slice\"), n(\"line\", \"flow\"), n(\"polyline\", \"counter\"),"
        " int(\"probs\" in t), int(\"scores+scaled\" in t))' '{}'",
        svg.string()));
    assert_int_equal(py.status, 0);
    size_t waits = 0;
    for (const auto &r : t.records)
        waits += r.opcode == NEURON_OP_SEM_WAIT && r.has_signal;
    assert_string_equal(py.out.c_str(),
                        fmt::format("{} {} 2 1 1\n", t.records.size(), waits).c_str());
    Run bad = run(
        fmt::format("'{}' export --format svg --job 2 '{}'", NEURON_PROFILE_BIN, file.string()));
    assert_int_equal(bad.status, 1);
    assert_true(contains(bad.err, "job 2 does not exist: the file has 1 job(s)"));
    fs::remove(file);
    fs::remove(svg);
}

// The summary's figures are the job's: cycles, instructions, DMA bytes, and
// every engine's busy + waiting + idle adds up to the job's cycles.
static void summary_agrees_with_the_job(void **) {
    Profiled p = profile_relu(256);
    nprof::JobSummary s = nprof::summarize(p.job, 0);
    const Trace &t = s.trace;
    uint64_t last = 0, instr = 0;
    for (const auto &r : t.records)
        last = std::max(last, r.end);
    assert_int_equal(last, t.cycles);
    // Each engine from the records themselves: its stream runs from cycle 0
    // to its last end, waiting in its SEM_WAITs.
    uint64_t end[4] = {0}, wait[4] = {0};
    for (const auto &r : t.records) {
        size_t e = static_cast<size_t>(r.engine) - 1;
        end[e] = std::max(end[e], r.end);
        wait[e] += r.wait;
    }
    for (size_t e = 0; e < 4; e++) {
        const auto &et = s.engines[e];
        assert_int_equal(et.waiting, wait[e]);
        assert_int_equal(et.idle, t.cycles - end[e]);
        assert_int_equal(et.busy, end[e] - wait[e]);
        instr += et.instructions;
    }
    // Scalar waits for the load (2113 cycles), Sync for the activation.
    assert_int_equal(s.engines[2].waiting, 2113);
    assert_int_equal(s.engines[3].waiting, 64 + 256 + 2);
    assert_int_equal(instr, p.instructions);
    assert_int_equal(t.instructions, p.instructions);
    assert_int_equal(s.dma_bytes, p.dma_bytes);
    assert_int_equal(s.dma_instructions, 2);
    // Sync: load, signal, wait, store, end; Scalar: wait, activate, signal, end.
    assert_int_equal(s.engines[3].instructions, 5);
    assert_int_equal(s.engines[2].instructions, 4);
    assert_int_equal(s.engines[0].instructions, 0);
    assert_int_equal(s.engines[0].idle, t.cycles);
    // The scalar engine waits for the load: the load's cycles, the longest stall.
    assert_true(!s.stalls.empty());
    assert_int_equal(static_cast<int>(s.stalls[0].engine), NEURON_ENGINE_SCALAR);
    assert_int_equal(s.stalls[0].cycles, 64 + 128 * 256 * 4 / 64 + 1);
    assert_true(contains(s.stalls[0].semaphore, "loaded (sem 0)"));
    assert_true(contains(s.stalls[0].signal_text, "sync #1 signal sem0 (loaded) += 1"));
    assert_int_equal(s.top[0].cycles, 64 + 128 * 256 * 4 / 64);
    assert_int_equal(t.sbuf_high, 2 * 256 * 4);
    assert_int_equal(s.sbuf_partition, 24u << 20 >> 7);

    std::string v = nprof::render_view({s});
    assert_true(contains(v, fmt::format("status OK, {} cycles", t.cycles)));
    assert_true(
        contains(v, fmt::format("{} instructions, {} DMA bytes", p.instructions, p.dma_bytes)));
    assert_true(contains(
        v, fmt::format("SBUF high-water: {} of {} bytes per partition", 2048, s.sbuf_partition)));
    assert_true(contains(v, "dma_load sbuf.fp32[p0+128 @0x0 256] (x)"));
    assert_false(v.find("TRUNCATED") != std::string::npos);
}

static void truncated_summary_says_so(void **) {
    Profiled p = profile_relu(16, 4);
    nprof::JobSummary s = nprof::summarize(p.job, 0);
    assert_true(s.trace.truncated());
    std::string v = nprof::render_view({s});
    assert_true(
        contains(v, fmt::format("trace TRUNCATED: 4 of {} instructions recorded", p.instructions)));
}

// How capture_view_export's command picks its device: the simulator, or
// with --kernel (in the VM) the first device of neuron.ko.
static const char *device_env = "NEURON_DEVICE=sim ";

namespace {

/// The counter tracks of @p doc rise in time: each name's events in
/// order of their timestamps, and their values with them.
void assert_counters_rise(const nlohmann::json &doc) {
    std::map<std::string, std::pair<double, double>> last; // name: ts, value
    for (const auto &ev : doc["traceEvents"]) {
        if (ev["ph"] != "C")
            continue;
        const std::string name = ev["name"];
        const double ts = ev["ts"], v = ev["args"]["bytes per partition"];
        if (auto it = last.find(name); it != last.end()) {
            if (ts < it->second.first || v < it->second.second)
                fail_msg("counter '%s' goes back: %g bytes at %g us after %g bytes at %g us",
                         name.c_str(), v, ts, it->second.second, it->second.first);
        }
        last[name] = {ts, v};
    }
    assert_int_equal(last.size(), 2);
}

/// The SVG's counter lines run left to right and never down.
void assert_counter_lines_rise(const std::string &svg) {
    size_t lines = 0;
    for (size_t at = svg.find("class=\"counter\" points=\""); at != std::string::npos;
         at = svg.find("class=\"counter\" points=\"", at + 1)) {
        const size_t from = at + std::strlen("class=\"counter\" points=\"");
        std::istringstream pts(svg.substr(from, svg.find('"', from) - from));
        double x0 = -1, y0 = 1e9, x = 0, y = 0;
        char comma = 0;
        while (pts >> x >> comma >> y) {
            if (x < x0 || y > y0) // y grows downwards
                fail_msg("counter line %zu goes back: %.2f,%.1f after %.2f,%.1f", lines, x, y, x0,
                         y0);
            x0 = x;
            y0 = y;
        }
        lines++;
    }
    assert_int_equal(lines, 2);
}

} // namespace

// The high-water marks in time order, though the device keeps them in
// the order it ran the records: a record of one engine that ran later but
// ended earlier raises the mark earlier.
static void high_water_in_time_order(void **) {
    Trace t;
    auto rec = [&](Engine e, uint64_t end, uint32_t sbuf, uint32_t psum) {
        TraceRecord r;
        r.engine = e;
        r.end = end;
        r.sbuf_high = sbuf;
        r.psum_high = psum;
        t.records.push_back(r);
    };
    rec(Engine::sync, 100, 10, 0);   // raises SBUF to 10 at 100
    rec(Engine::sync, 300, 30, 0);   // to 30 at 300
    rec(Engine::tensor, 50, 30, 8);  // no SBUF write beyond 30; PSUM 8 at 50
    rec(Engine::vector, 200, 40, 8); // SBUF 40 at 200: hides the 30 at 300
    rec(Engine::vector, 200, 50, 8); // and 50 at the same cycle
    rec(Engine::scalar, 20, 50, 4);  // no raise (4 < 8): nothing
    auto sb = nprof::high_water(t, true), ps = nprof::high_water(t, false);
    assert_int_equal(sb.size(), 2);
    assert_int_equal(sb[0].cycle, 100);
    assert_int_equal(sb[0].bytes, 10);
    assert_int_equal(sb[1].cycle, 200);
    assert_int_equal(sb[1].bytes, 50);
    assert_int_equal(ps.size(), 1);
    assert_int_equal(ps[0].cycle, 50);
    assert_int_equal(ps[0].bytes, 8);
}

// capture -> view -> export, on the transformer block example.
static void capture_view_export(void **) {
    fs::path file = scratch("tb.ntrace"), json_file = scratch("tb.json");
    Run c = run(fmt::format("{}'{}' capture -o '{}' -- '{}'", device_env, NEURON_PROFILE_BIN,
                            file.string(), NEURON_EXAMPLE_BIN));
    assert_true(contains(c.err, "neuron-profile: 1 profiled job of"));
    assert_int_equal(c.status, 0);
    auto jobs = ntrace::read(file);
    assert_int_equal(jobs.size(), 1);
    Trace t = parse_trace(jobs[0].trace);
    assert_false(t.truncated());
    assert_int_equal(t.records.size(), t.instructions);

    Run v = run(fmt::format("'{}' view '{}'", NEURON_PROFILE_BIN, file.string()));
    assert_int_equal(v.status, 0);
    assert_true(contains(v.out, fmt::format("status OK, {} cycles", t.cycles)));
    assert_true(
        contains(v.out, fmt::format("{} instructions, {} DMA bytes", t.instructions, t.dma_bytes)));
    assert_true(contains(v.out, "longest semaphore waits:"));
    assert_true(contains(v.out, "PSUM high-water"));
    // The example's program says nothing of live ranges: the marks only.
    assert_true(v.out.find("in use") == std::string::npos);
    // The example names its parts: the summary's table and top list say them.
    assert_true(contains(v.out, "by graph node"));
    assert_true(contains(v.out, "mlp.fc1+gelu"));
    assert_true(contains(v.out, "[load] dma_load"));

    Run e = run(fmt::format("'{}' export --format chrome '{}'", NEURON_PROFILE_BIN, file.string()));
    assert_int_equal(e.status, 0);
    auto doc = nlohmann::json::parse(e.out);
    std::string problems = trace_check::check(doc);
    if (!problems.empty())
        fail_msg("the export is not a valid trace:\n%s", problems.c_str());
    size_t slices = 0, flows = 0, waits = 0, counters = 0;
    for (const auto &ev : doc["traceEvents"]) {
        slices += ev["ph"] == "X";
        flows += ev["ph"] == "s";
        counters += ev["ph"] == "C";
    }
    for (const auto &r : t.records)
        waits += r.opcode == NEURON_OP_SEM_WAIT && r.has_signal;
    assert_int_equal(slices, t.records.size());
    assert_int_equal(flows, waits);
    assert_true(counters >= 2);
    for (const auto &ev : doc["traceEvents"])
        assert_false(ev["ph"] == "C" && ev["name"].get<std::string>().ends_with(" in use"));
    // The block's engines raise the marks out of record order.
    assert_counters_rise(doc);
    Run svg = run(fmt::format("'{}' export --format svg '{}'", NEURON_PROFILE_BIN, file.string()));
    assert_int_equal(svg.status, 0);
    assert_counter_lines_rise(svg.out);
    fs::remove(file);
}

// The checker is not a rubber stamp: each broken rule is reported.
static void checker_finds_broken_traces(void **) {
    using nlohmann::json;
    auto x = [](double ts, double dur, int tid) {
        return json{{"name", "a"}, {"ph", "X"}, {"pid", 1}, {"tid", tid}, {"ts", ts}, {"dur", dur}};
    };
    json good = {{"traceEvents", json::array({x(0, 2, 1), x(2, 1, 1), x(0, 5, 2)})}};
    assert_string_equal(trace_check::check(good).c_str(), "");
    json no_dur = good;
    no_dur["traceEvents"][0].erase("dur");
    assert_true(contains(trace_check::check(no_dur), "needs \"dur\""));
    json overlap = {{"traceEvents", json::array({x(0, 2, 1), x(1, 2, 1)})}};
    assert_true(contains(trace_check::check(overlap), "overlap without nesting"));
    json lone_flow = good;
    lone_flow["traceEvents"].push_back(
        {{"name", "f"}, {"ph", "s"}, {"id", 7}, {"pid", 1}, {"tid", 1}, {"ts", 1}});
    assert_true(contains(trace_check::check(lone_flow), "one start (s) and one finish (f)"));
    json no_pid = good;
    no_pid["traceEvents"][1].erase("pid");
    assert_true(contains(trace_check::check(no_pid), "\"pid\" (an integer) is required"));
    json bad_counter = {{"traceEvents", json::array({{{"name", "c"},
                                                      {"ph", "C"},
                                                      {"pid", 1},
                                                      {"tid", 0},
                                                      {"ts", 0},
                                                      {"args", {{"v", "x"}}}}})}};
    assert_true(contains(trace_check::check(bad_counter), "is not a number"));
    assert_true(contains(trace_check::check(json::array()), "\"traceEvents\" array"));
}

// $NEURON_PROFILE is read when the device is opened; its jobs take one
// trace buffer, allocated for the first and reused by the next.
static void env_capture_reuses_its_buffer(void **) {
    fs::path f = scratch("env.ntrace");
    fs::remove(f);
    setenv(ntrace::env_file, f.c_str(), 1);
    Device d = Device::open("sim");
    unsetenv(ntrace::env_file);
    Device plain = Device::open("sim");
    ProgramBuilder b("relu2x1");
    test::add_relu2x1(b, 16);
    Program prog = b.finish();
    LoadedProgram lp = d.load(prog), lp0 = plain.load(prog);
    Buffer x = d.allocate(128 * 16 * 4), y = d.allocate(128 * 16 * 4);
    Buffer x0 = plain.allocate(128 * 16 * 4), y0 = plain.allocate(128 * 16 * 4);
    const auto &pool = d.state()->idle_profiles;
    uint32_t handle = 0;
    for (int i = 0; i < 3; i++) {
        d.queue(0).submit(lp, Arguments().bind("x", x).bind("y", y)).wait();
        plain.queue(0).submit(lp0, Arguments().bind("x", x0).bind("y", y0)).wait();
        assert_int_equal(pool.size(), 1);
        if (i == 0)
            handle = pool[0].buffer().handle();
        assert_int_equal(pool[0].buffer().handle(), handle);
    }
    auto jobs = ntrace::read(f);
    assert_int_equal(jobs.size(), 3);
    for (const auto &j : jobs) {
        Trace t = parse_trace(j.trace);
        assert_int_equal(t.records.size(), t.instructions);
        assert_int_equal(t.status, 0); // NEURON_JOB_STATUS_OK
    }
    fs::remove(f);
}

// A program that binds every slot the device has leaves none for the
// trace: under $NEURON_PROFILE its jobs run unprofiled (with a warning),
// never refused, and the other programs' jobs are profiled as before.
static void env_capture_runs_a_program_without_a_free_slot(void **) {
    fs::path f = scratch("full.ntrace");
    fs::remove(f);
    setenv(ntrace::env_file, f.c_str(), 1);
    Device d = Device::open("sim");
    unsetenv(ntrace::env_file);
    const uint32_t max = d.info().max_bindings;
    // relu2x1 and unused inputs up to the device's slots.
    auto wide = [](uint32_t extra) {
        ProgramBuilder b("relu2x1_wide");
        test::add_relu2x1(b, 16);
        for (uint32_t i = 0; i < extra; i++)
            b.argument(fmt::format("unused{}", i), DType::fp32, {128, 1}, Direction::in);
        return b.finish();
    };
    const uint32_t base = wide(0).num_slots();
    Program full = wide(max - base);
    assert_int_equal(full.num_slots(), max);
    ProgramBuilder nb("relu2x1");
    test::add_relu2x1(nb, 16);
    LoadedProgram lp_full = d.load(full), lp = d.load(nb.finish());
    Buffer x = d.allocate(128 * 16 * 4), y = d.allocate(128 * 16 * 4), u = d.allocate(128 * 4);
    Arguments args;
    args.bind("x", x).bind("y", y);
    for (uint32_t i = 0; i < max - base; i++)
        args.bind(fmt::format("unused{}", i), u);
    d.queue(0).submit(lp_full, args).wait();
    d.queue(0).submit(lp, Arguments().bind("x", x).bind("y", y)).wait();
    auto jobs = ntrace::read(f);
    assert_int_equal(jobs.size(), 1);
    assert_string_equal(jobs[0].program.name().c_str(), "relu2x1");
    fs::remove(f);
}

// append() writes a program once per file, however many of its jobs follow;
// a version 1.0 file (each job with its program) still reads.
static void programs_once_per_file(void **) {
    Profiled p = profile_relu(16);
    fs::path f = scratch("once.ntrace");
    fs::remove(f);
    for (int i = 0; i < 3; i++) {
        p.job.seqno = static_cast<uint64_t>(i) + 1;
        ntrace::append(f, p.job);
    }
    const auto bytes = p.job.program.bytes();
    const uint64_t one = ntrace::encode_program(bytes).size(),
                   job = ntrace::encode_job(p.job).size();
    assert_int_equal(fs::file_size(f), ntrace::file_header_size + one + 3 * job);
    auto jobs = ntrace::read(f);
    assert_int_equal(jobs.size(), 3);
    for (int i = 0; i < 3; i++) {
        assert_int_equal(jobs[i].seqno, i + 1);
        assert_true(std::ranges::equal(jobs[i].program.bytes(), bytes));
        assert_true(jobs[i].trace == p.job.trace);
    }
    // The jobs of one program share one copy of it in memory.
    for (int i = 1; i < 3; i++)
        assert_ptr_equal(jobs[i].program.bytes().data(), jobs[0].program.bytes().data());
    // Rewritten from scratch: the program is written again.
    fs::remove(f);
    ntrace::append(f, p.job);
    assert_int_equal(fs::file_size(f), ntrace::file_header_size + one + job);
    assert_int_equal(ntrace::read(f).size(), 1);

    // Version 1.0: a 64-byte job header, then its program and trace.
    std::vector<std::byte> v1 = ntrace::encode_header();
    v1[4] = std::byte{1};
    std::vector<std::byte> h1(64);
    auto put = [&](size_t at, uint64_t v, size_t n) {
        for (size_t i = 0; i < n; i++)
            h1[at + i] = static_cast<std::byte>(v >> (8 * i));
    };
    put(0, ntrace::job_magic, 4);
    put(4, 64, 4);
    put(8, 64 + bytes.size() + p.job.trace.size(), 8);
    put(24, 7, 8);
    put(32, p.job.clock_mhz, 4);
    put(56, bytes.size(), 4);
    put(60, p.job.trace.size(), 4);
    // Two jobs, each with its own copy of the program.
    for (int i = 0; i < 2; i++) {
        v1.insert(v1.end(), h1.begin(), h1.end());
        v1.insert(v1.end(), bytes.begin(), bytes.end());
        v1.insert(v1.end(), p.job.trace.begin(), p.job.trace.end());
    }
    auto old = ntrace::parse(v1, "v1");
    assert_int_equal(old.size(), 2);
    assert_int_equal(old[0].seqno, 7);
    assert_true(std::ranges::equal(old[0].program.bytes(), bytes));
    assert_true(old[0].trace == p.job.trace);
    // Read into one copy, as a 2.0 file's.
    assert_ptr_equal(old[1].program.bytes().data(), old[0].program.bytes().data());
    // The copy is the reader's own, not the file's bytes it was given.
    assert_true(old[0].program.bytes().data() < v1.data() ||
                old[0].program.bytes().data() >= v1.data() + v1.size());
    fs::remove(f);
}

// A broken file is refused with where and why, and exit status 1.
static void broken_files(void **) {
    Profiled p = profile_relu(16);
    auto head = ntrace::encode_header(), prog = ntrace::encode_program(p.job.program.bytes()),
         body = ntrace::encode_job(p.job);
    std::vector<std::byte> whole(head);
    whole.insert(whole.end(), prog.begin(), prog.end());
    const size_t job_at = whole.size();
    whole.insert(whole.end(), body.begin(), body.end());
    fs::path f = scratch("broken.ntrace");
    auto view = [&](std::span<const std::byte> b) {
        write_file(f, b);
        return run(fmt::format("'{}' view '{}'", NEURON_PROFILE_BIN, f.string()));
    };
    Run ok = view(whole);
    assert_int_equal(ok.status, 0);

    Run cut = view(std::span(whole).first(whole.size() - 100));
    assert_int_equal(cut.status, 1);
    assert_true(contains(cut.err, fmt::format("job 0: offset {:#x}:", job_at + 8)));
    assert_true(contains(cut.err, "cut short?"));

    std::vector<std::byte> magic(whole);
    magic[0] = std::byte{'X'};
    Run m = view(magic);
    assert_int_equal(m.status, 1);
    assert_true(contains(m.err, "not a .ntrace file"));

    // Record 0's engine, in the trace after the job header and the program.
    std::vector<std::byte> eng(whole);
    size_t rec0 = job_at + ntrace::job_header_size + 64;
    eng[rec0] = std::byte{9};
    Run e = view(eng);
    assert_int_equal(e.status, 1);
    assert_true(contains(e.err, fmt::format("its trace: offset {:#x}: record 0: engine 9", rec0)));

    // A job without its program chunk.
    std::vector<std::byte> orphan(head);
    orphan.insert(orphan.end(), body.begin(), body.end());
    Run o = view(orphan);
    assert_int_equal(o.status, 1);
    assert_true(
        contains(o.err, fmt::format("job 0: offset {:#x}: program {:#018x}: no program "
                                    "chunk before it",
                                    head.size() + 64, ntrace::program_id(p.job.program.bytes()))));

    Run missing = run(fmt::format("'{}' view '{}'", NEURON_PROFILE_BIN, scratch("none").string()));
    assert_int_equal(missing.status, 1);
    assert_true(contains(missing.err, "cannot open it"));

    // capture's output: a file it can create, and a regular one.
    Run nodir = run(fmt::format("'{}' capture -o '{}' -- true", NEURON_PROFILE_BIN,
                                (scratch("none") / "x.ntrace").string()));
    assert_int_equal(nodir.status, 1);
    assert_true(contains(nodir.err, "x.ntrace: cannot create it: No such file or directory"));
    Run dev = run(fmt::format("'{}' capture -o /dev/null -- true", NEURON_PROFILE_BIN));
    assert_int_equal(dev.status, 1);
    assert_true(contains(dev.err, "neuron-profile: /dev/null: not a regular file: name a .ntrace "
                                  "file to write"));
    fs::remove(f);
}

// An SBUF/PSUM operand of one executed instruction: partitions [p0, p1),
// bytes [b0, b1) of each.
struct Touch {
    uint8_t space;
    uint32_t p0, p1;
    uint64_t b0, b1;
};

// What instruction @p index of @p e's stream reads and writes, decoded from
// its operands (hw/neuron_isa.h): a DMA's SBUF side, a compute
// instruction's taps.
std::vector<Touch> touches(const Program &p, Engine e, uint32_t index) {
    neuron_insn in;
    std::memcpy(&in, p.stream(e).subspan(size_t{index} * 64, 64).data(), 64);
    std::vector<neuron_tap> taps;
    if (in.opcode == NEURON_OP_DMA_LOAD || in.opcode == NEURON_OP_DMA_STORE ||
        in.opcode == NEURON_OP_DMA_GATHER)
        taps.push_back(in.dma.sbuf);
    else if (in.opcode >= 0x10)
        taps.assign(std::begin(in.op), std::end(in.op));
    std::vector<Touch> out;
    for (const neuron_tap &t : taps) {
        if (t.space == NEURON_SPACE_NONE)
            continue;
        const uint64_t size = t.dtype == NEURON_DT_FP32 || t.dtype == NEURON_DT_INT32 ? 4 : 2;
        const uint64_t last =
            uint64_t{t.count[1] - 1u} * t.stride[1] + uint64_t{t.count[0] - 1u} * t.stride[0];
        out.push_back({t.space, t.part_start, uint32_t{t.part_start} + t.part_count, t.offset,
                       t.offset + (last + 1) * size});
    }
    return out;
}

// A compiled graph says when each SBUF/PSUM range is in use (its LIVE
// section), and the device's trace holds it to that: every operand of every
// executed instruction lies inside a range of its space that is in use
// from before the instruction starts to after it ends; two ranges that
// share bytes are never in use at once; the in-use peaks stay within the
// high-water marks; view, the chrome export and the SVG show them.
static void compiled_live_ranges_hold(void **) {
    using namespace neuron::compiler;
    Graph g = compiler::parse("graph mlp\n"
                              "input x: fp32[256, 64]\n"
                              "input w1: fp32[64, 600]\n"
                              "input w2: fp32[600, 64]\n"
                              "h = matmul(x, w1)\n"
                              "e = exp(x)\n"
                              "a = gelu(h)\n"
                              "y = matmul(a, w2)\n"
                              "z = add(y, e)\n"
                              "s = softmax(z)\n"
                              "n = layer_norm(s)\n"
                              "output n, h\n");
    Compiled c = compile(g);
    const Program &prog = c.program;
    const auto live = prog.live_ranges();
    size_t psum = 0;
    for (const auto &r : live)
        psum += r.kind == format::symbol_psum;
    assert_true(psum > 0 && psum < live.size());
    ntrace::Job job = profile_compiled(prog);
    const Trace t = parse_trace(job.trace);
    assert_int_equal(t.status, 0);
    assert_false(t.truncated());

    // Each range's time: its live instruction's start to its engines' last
    // instructions' latest end.
    std::map<std::pair<Engine, uint32_t>, std::pair<uint64_t, uint64_t>> when;
    for (const auto &r : t.records) {
        auto [it, fresh] = when.try_emplace({r.engine, r.index}, std::pair{r.start, r.end});
        if (!fresh)
            it->second = {std::min(it->second.first, r.start), std::max(it->second.second, r.end)};
    }
    std::vector<std::pair<uint64_t, uint64_t>> span;
    for (const auto &r : live) {
        assert_true(when.count({r.live.engine, r.live.index}));
        uint64_t end = 0;
        for (unsigned e = 0; e < num_engines; e++)
            if (r.dead[e] != LiveRange::no_insn)
                end = std::max(end, when.at({static_cast<Engine>(e + 1), r.dead[e]}).second);
        span.emplace_back(when.at({r.live.engine, r.live.index}).first, end);
    }
    size_t checked = 0;
    for (const auto &rec : t.records)
        for (const Touch &x : touches(prog, rec.engine, rec.index)) {
            bool covered = false;
            for (size_t k = 0; k < live.size() && !covered; k++) {
                const auto &r = live[k];
                covered = r.kind == x.space && r.part_start <= x.p0 &&
                          x.p1 <= r.part_start + r.part_count && r.offset <= x.b0 &&
                          x.b1 <= uint64_t{r.offset} + r.size && span[k].first <= rec.start &&
                          rec.end <= span[k].second;
            }
            if (!covered)
                fail_msg(
                    "%s #%u [%llu, %llu] (%s) touches %s p%u..%u [%#llx, %#llx) outside "
                    "every range in use then",
                    to_string(rec.engine), rec.index, static_cast<unsigned long long>(rec.start),
                    static_cast<unsigned long long>(rec.end),
                    prog.origin(rec.engine, rec.index) ? prog.origin(rec.engine, rec.index)->c_str()
                                                       : "-",
                    x.space == NEURON_SPACE_SBUF ? "SBUF" : "PSUM", x.p0, x.p1,
                    static_cast<unsigned long long>(x.b0), static_cast<unsigned long long>(x.b1));
            checked++;
        }
    assert_true(checked > 100);
    // ... and each range's first and last instructions do touch it: a range
    // is not stretched beyond its uses. (Ranges that share bytes may still
    // overlap in time by a little: the Kernel lets an instruction write the
    // bytes whose readers are done while others of the range are not.)
    auto touches_range = [&](const LiveRange &r, Engine e, uint32_t index) {
        for (const Touch &x : touches(prog, e, index))
            if (x.space == r.kind && x.p0 < r.part_start + r.part_count && r.part_start < x.p1 &&
                x.b0 < uint64_t{r.offset} + r.size && r.offset < x.b1)
                return true;
        return false;
    };
    for (const auto &r : live) {
        if (!touches_range(r, r.live.engine, r.live.index))
            fail_msg("'%s': its live instruction does not touch it", r.name.c_str());
        for (unsigned e = 0; e < num_engines; e++)
            if (r.dead[e] != LiveRange::no_insn &&
                !touches_range(r, static_cast<Engine>(e + 1), r.dead[e]))
                fail_msg("'%s': its last %s instruction does not touch it", r.name.c_str(),
                         to_string(static_cast<Engine>(e + 1)));
    }

    nprof::JobSummary s = nprof::summarize(job, 0);
    assert_true(s.has_live);
    assert_true(s.sbuf_in_use > 0 && s.sbuf_in_use <= t.sbuf_high);
    assert_true(s.psum_in_use > 0 && s.psum_in_use <= t.psum_high);
    // The reuse shows: less in use at the peak than the buffers' total.
    uint64_t total = 0;
    for (const auto &r : live)
        total += r.kind == format::symbol_sbuf ? r.size : 0;
    assert_true(s.sbuf_in_use < total);
    for (bool sbuf : {true, false}) {
        auto steps = nprof::in_use(t, prog, sbuf);
        assert_false(steps.empty());
        assert_int_equal(steps.back().bytes, 0); // all freed by the end
        for (size_t i = 1; i < steps.size(); i++)
            assert_true(steps[i - 1].cycle < steps[i].cycle);
    }
    std::string v = nprof::render_view({s});
    assert_true(contains(v, fmt::format("SBUF high-water: {} of {} bytes per partition ({:.1f}%); "
                                        "in use at most {} ",
                                        t.sbuf_high, s.sbuf_partition,
                                        100.0 * t.sbuf_high / s.sbuf_partition, s.sbuf_in_use)));
    assert_true(contains(v, fmt::format("in use at most {} ", s.psum_in_use)));
    auto doc = nprof::export_chrome({job});
    std::string problems = trace_check::check(doc);
    if (!problems.empty())
        fail_msg("the export is not a valid trace:\n%s", problems.c_str());
    uint32_t peak_sbuf = 0, peak_psum = 0;
    for (const auto &ev : doc["traceEvents"])
        if (ev["ph"] == "C") {
            uint32_t b = ev["args"]["bytes per partition"].get<uint32_t>();
            if (ev["name"] == "SBUF in use")
                peak_sbuf = std::max(peak_sbuf, b);
            if (ev["name"] == "PSUM in use")
                peak_psum = std::max(peak_psum, b);
        }
    assert_int_equal(peak_sbuf, s.sbuf_in_use);
    assert_int_equal(peak_psum, s.psum_in_use);
    std::string svg = nprof::export_svg({job}, 0);
    size_t lines = 0;
    for (size_t at = 0; (at = svg.find("class=\"in-use\"", at)) != std::string::npos; at++)
        lines++;
    assert_int_equal(lines, 2);
}

// The LIVE section round trip, and what its reader refuses: the program
// container of docs/program-format.md, version 1.2 only with LIVE.
static void live_section_round_trip(void **) {
    auto build = [](std::optional<LiveRange> r) {
        ProgramBuilder b("relu");
        test::add_relu2x1(b, 64);
        if (r)
            b.live_range(*r);
        return b.build();
    };
    Program plain = Program::parse(build(std::nullopt));
    assert_int_equal(plain.version_minor(), 0);
    assert_true(plain.live_ranges().empty());
    LiveRange r;
    r.name = "x";
    r.kind = format::symbol_sbuf;
    r.part_start = 0;
    r.part_count = 128;
    r.offset = 0;
    r.size = 256;
    r.live = {Engine::sync, 0}; // its load
    r.dead[3] = 0;              // the load again, on sync
    r.dead[2] = 1;              // the activation, on scalar
    Program p = Program::parse(build(r));
    assert_int_equal(p.version_minor(), 2);
    assert_int_equal(p.live_ranges().size(), 1);
    const LiveRange &q = p.live_ranges()[0];
    assert_string_equal(q.name.c_str(), "x");
    assert_int_equal(q.kind, format::symbol_sbuf);
    assert_int_equal(q.part_count, 128);
    assert_int_equal(q.size, 256);
    assert_true(q.live == r.live);
    assert_true(q.dead == r.dead);
    auto refused = [&](LiveRange bad, const char *why) {
        try {
            build(bad);
            fail_msg("a live range was not refused: %s", why);
        } catch (const Error &e) {
            if (!contains(e.what(), why))
                fail_msg("'%s' does not say '%s'", e.what(), why);
        }
    };
    LiveRange far = r;
    far.dead[2] = 99;
    refused(far, "live range 0 'x': dead instruction 99 is outside the scalar stream's");
    LiveRange early = r;
    early.live = {Engine::scalar, 1};
    early.dead[2] = 0;
    refused(early, "the scalar stream's last use is before its first");
    LiveRange psum = r;
    psum.kind = format::symbol_psum;
    psum.offset = 16256;
    refused(psum, "PSUM range [0x3f80, +0x100) exceeds a partition");
}

int main(int argc, char **argv) {
    if (argc == 2 && std::string_view(argv[1]) == "--kernel") {
        device_env = "";
        const struct CMUnitTest kernel_tests[] = {cmocka_unit_test(capture_view_export)};
        return cmocka_run_group_tests(kernel_tests, nullptr, nullptr);
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(summary_agrees_with_the_job),
        cmocka_unit_test(compiled_graph_names_its_nodes),
        cmocka_unit_test(compiled_live_ranges_hold),
        cmocka_unit_test(live_section_round_trip),
        cmocka_unit_test(truncated_summary_says_so),
        cmocka_unit_test(capture_view_export),
        cmocka_unit_test(high_water_in_time_order),
        cmocka_unit_test(checker_finds_broken_traces),
        cmocka_unit_test(programs_once_per_file),
        cmocka_unit_test(env_capture_reuses_its_buffer),
        cmocka_unit_test(env_capture_runs_a_program_without_a_free_slot),
        cmocka_unit_test(broken_files),
    };
    return cmocka_run_group_tests(tests, nullptr, nullptr);
}
