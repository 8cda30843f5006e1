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
#include <filesystem>
#include <fstream>
#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

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
    Profiled p;
    p.instructions = core_counter(d, "instructions") - i0;
    p.dma_bytes = core_counter(d, "dma_bytes") - b0;
    p.job.core = 0;
    p.job.seqno = f.seqno();
    p.job.clock_mhz = d.info().core_clock_mhz;
    p.job.partitions = d.info().partitions;
    p.job.sbuf_size = d.info().sbuf_size;
    p.job.psum_size = d.info().psum_size;
    auto c = lp.program().bytes();
    p.job.program.assign(c.begin(), c.end());
    p.job.trace = prof.bytes();
    return p;
}

} // namespace

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

// capture -> view -> export, on the transformer block example.
static void capture_view_export(void **) {
    fs::path file = scratch("tb.ntrace"), json_file = scratch("tb.json");
    Run c = run(fmt::format("NEURON_DEVICE=sim '{}' capture -o '{}' -- '{}'", NEURON_PROFILE_BIN,
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

// A broken file is refused with where and why, and exit status 1.
static void broken_files(void **) {
    Profiled p = profile_relu(16);
    auto head = ntrace::encode_header(), body = ntrace::encode_job(p.job);
    std::vector<std::byte> whole(head);
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
    assert_true(contains(cut.err, "job 0: offset 0x18:"));
    assert_true(contains(cut.err, "cut short?"));

    std::vector<std::byte> magic(whole);
    magic[0] = std::byte{'X'};
    Run m = view(magic);
    assert_int_equal(m.status, 1);
    assert_true(contains(m.err, "not a .ntrace file"));

    // Record 0's engine, in the trace after the job header and the program.
    std::vector<std::byte> eng(whole);
    size_t rec0 = head.size() + ntrace::job_header_size + p.job.program.size() + 64;
    eng[rec0] = std::byte{9};
    Run e = view(eng);
    assert_int_equal(e.status, 1);
    assert_true(contains(e.err, fmt::format("its trace: offset {:#x}: record 0: engine 9", rec0)));

    Run missing = run(fmt::format("'{}' view '{}'", NEURON_PROFILE_BIN, scratch("none").string()));
    assert_int_equal(missing.status, 1);
    assert_true(contains(missing.err, "cannot open it"));
    fs::remove(f);
}

int main() {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(summary_agrees_with_the_job),
        cmocka_unit_test(truncated_summary_says_so),
        cmocka_unit_test(capture_view_export),
        cmocka_unit_test(checker_finds_broken_traces),
        cmocka_unit_test(broken_files),
    };
    return cmocka_run_group_tests(tests, nullptr, nullptr);
}
