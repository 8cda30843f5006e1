// SPDX-License-Identifier: MIT
#include "profile.hpp"

#include <algorithm>
#include <map>

#include <fmt/format.h>

#include "neuron_isa.h"
#include "neuron_regs.h"

namespace nprof {

using neuron::Engine;
using neuron::TraceRecord;

std::string engine_name(Engine e) {
    return neuron::to_string(e);
}

namespace {

const char *status_name(uint32_t s) {
    switch (s) {
    case NEURON_JOB_STATUS_OK:
        return "OK";
    case NEURON_JOB_STATUS_ABORTED:
        return "ABORTED";
    case NEURON_JOB_STATUS_DECODE:
        return "DECODE";
    case NEURON_JOB_STATUS_BINDING_INDEX:
        return "BINDING_INDEX";
    case NEURON_JOB_STATUS_BINDING_RANGE:
        return "BINDING_RANGE";
    case NEURON_JOB_STATUS_BINDING_ACCESS:
        return "BINDING_ACCESS";
    case NEURON_JOB_STATUS_SEMAPHORE:
        return "SEMAPHORE";
    case NEURON_JOB_STATUS_LIMIT:
        return "LIMIT";
    default:
        return "fault";
    }
}

const char *mnemonic(uint8_t op) {
    const neuron_opcode_info *i = neuron_opcode_lookup(op);
    return i ? i->name : "?";
}

/// The program's name for semaphore @p id, as "name (sem N)" or "sem N".
std::string sem_label(const neuron::Program *p, uint32_t id) {
    if (p)
        for (const auto &s : p->symbols())
            if (s.kind == neuron::format::symbol_semaphore && s.offset == id)
                return fmt::format("{} (sem {})", s.name, id);
    return fmt::format("sem {}", id);
}

/// The disassembly of instruction @p index of @p e's stream, with names.
std::string insn_text(const neuron::Program *p, Engine e, uint32_t index, uint8_t opcode) {
    if (!p)
        return mnemonic(opcode);
    auto s = p->stream(e);
    if (static_cast<uint64_t>(index) * 64 + 64 > s.size())
        return fmt::format("{} (outside the program's {} stream)", mnemonic(opcode),
                           engine_name(e));
    return neuron::disassemble_instruction(s.subspan(static_cast<size_t>(index) * 64, 64), p);
}

std::optional<neuron::Program> program_of(const neuron::ntrace::Job &j) {
    try {
        return neuron::Program::parse(j.program);
    } catch (const neuron::Error &) {
        return std::nullopt; // ntrace::parse() validated it; never here
    }
}

double pct(uint64_t part, uint64_t whole) {
    return whole ? 100.0 * static_cast<double>(part) / static_cast<double>(whole) : 0.0;
}

size_t engine_slot(Engine e) {
    return static_cast<size_t>(e) - 1;
}

} // namespace

JobSummary summarize(const neuron::ntrace::Job &job, size_t index, size_t top, size_t stalls) {
    JobSummary s;
    s.job = index;
    s.raw = &job;
    s.trace = neuron::parse_trace(job.trace);
    auto prog = program_of(job);
    const neuron::Program *p = prog ? &*prog : nullptr;
    s.program = p ? p->name() : "?";
    s.sbuf_partition = job.partitions ? job.sbuf_size / job.partitions : 0;
    s.psum_partition = job.partitions ? job.psum_size / job.partitions : 0;

    const auto &rs = s.trace.records;
    std::array<uint64_t, neuron::num_engines> last_end{};
    std::map<std::pair<int, uint32_t>, InsnCost> costs;
    for (size_t i = 0; i < rs.size(); i++) {
        const TraceRecord &r = rs[i];
        EngineTime &et = s.engines[engine_slot(r.engine)];
        uint64_t busy = r.end - r.start - r.wait;
        et.instructions++;
        et.busy += busy;
        et.waiting += r.wait;
        last_end[engine_slot(r.engine)] = std::max(last_end[engine_slot(r.engine)], r.end);
        InsnCost &c = costs[{static_cast<int>(r.engine), r.index}];
        c.engine = r.engine;
        c.index = r.index;
        c.runs++;
        c.cycles += busy;
        if (r.opcode == NEURON_OP_DMA_LOAD || r.opcode == NEURON_OP_DMA_STORE) {
            s.dma_instructions++;
            s.dma_bytes += r.bytes;
            s.dma_cycles += busy;
        }
        if (r.opcode == NEURON_OP_SEM_WAIT && r.wait > 0) {
            Stall st;
            st.record = i;
            st.engine = r.engine;
            st.index = r.index;
            st.start = r.start;
            st.cycles = r.wait;
            st.semaphore = sem_label(p, r.sem);
            if (r.has_signal && r.signal < rs.size()) {
                const TraceRecord &g = rs[r.signal];
                st.signal = r.signal;
                st.signal_text =
                    fmt::format("{} #{} {} at cycle {}", engine_name(g.engine), g.index,
                                insn_text(p, g.engine, g.index, g.opcode), g.end);
            }
            s.stalls.push_back(std::move(st));
        }
    }
    // An engine is idle from the end of its stream to the end of the job;
    // a stream's records follow each other on its clock from cycle 0.
    for (size_t e = 0; e < neuron::num_engines; e++) {
        EngineTime &et = s.engines[e];
        uint64_t used = et.busy + et.waiting;
        et.idle = s.trace.cycles > used ? s.trace.cycles - used : 0;
    }
    for (auto &[key, c] : costs) {
        c.text = insn_text(p, c.engine, c.index, 0);
        s.top.push_back(c);
    }
    std::stable_sort(s.top.begin(), s.top.end(),
                     [](const InsnCost &a, const InsnCost &b) { return a.cycles > b.cycles; });
    if (s.top.size() > top)
        s.top.resize(top);
    std::stable_sort(s.stalls.begin(), s.stalls.end(),
                     [](const Stall &a, const Stall &b) { return a.cycles > b.cycles; });
    if (s.stalls.size() > stalls)
        s.stalls.resize(stalls);
    return s;
}

std::string render_view(const std::vector<JobSummary> &jobs) {
    std::string o;
    if (jobs.empty())
        return "no profiled jobs in the file\n";
    for (const auto &s : jobs) {
        const auto &j = *s.raw;
        const auto &t = s.trace;
        double us = j.clock_mhz ? static_cast<double>(t.cycles) / j.clock_mhz : 0.0;
        o += fmt::format("job {} of {}: program '{}' on core {} (seqno {}, pid {})\n", s.job + 1,
                         jobs.size(), s.program, j.core, j.seqno, j.pid);
        o += fmt::format("  status {}, {} cycles = {:.3f} us at {} MHz, {} instructions, {} "
                         "DMA bytes\n",
                         status_name(t.status), t.cycles, us, j.clock_mhz, t.instructions,
                         t.dma_bytes);
        if (t.truncated())
            o += fmt::format("  trace TRUNCATED: {} of {} instructions recorded; the figures "
                             "below cover those only (capture with a larger --records)\n",
                             t.records.size(), t.instructions);
        o += fmt::format("  {:<8} {:>12} {:>20} {:>20} {:>20}\n", "engine", "instructions", "busy",
                         "waiting", "idle");
        for (size_t e = 0; e < neuron::num_engines; e++) {
            const EngineTime &et = s.engines[e];
            o += fmt::format("  {:<8} {:>12} {:>12} {:>6.1f}% {:>12} {:>6.1f}% {:>12} {:>6.1f}%\n",
                             engine_name(static_cast<Engine>(e + 1)), et.instructions, et.busy,
                             pct(et.busy, t.cycles), et.waiting, pct(et.waiting, t.cycles), et.idle,
                             pct(et.idle, t.cycles));
        }
        o += "  top instructions by cycles (busy cycles over all executions):\n";
        o += fmt::format("    {:>10} {:>6} {:>6}  {:<6} {:>6}  {}\n", "cycles", "share", "runs",
                         "engine", "index", "instruction");
        for (const auto &c : s.top)
            o += fmt::format("    {:>10} {:>5.1f}% {:>6}  {:<6} {:>6}  {}\n", c.cycles,
                             pct(c.cycles, t.cycles), c.runs, engine_name(c.engine),
                             fmt::format("#{}", c.index), c.text);
        if (s.stalls.empty()) {
            o += "  semaphore waits: none waited\n";
        } else {
            o += "  longest semaphore waits:\n";
            o += fmt::format("    {:>10} {:>10}  {:<6} {:>6}  {:<20} {}\n", "cycles", "at cycle",
                             "engine", "index", "semaphore", "released by");
            for (const auto &st : s.stalls)
                o += fmt::format("    {:>10} {:>10}  {:<6} {:>6}  {:<20} {}\n", st.cycles, st.start,
                                 engine_name(st.engine), fmt::format("#{}", st.index), st.semaphore,
                                 st.signal ? st.signal_text : "?");
        }
        if (s.dma_instructions) {
            double per_cycle = s.dma_cycles ? static_cast<double>(s.dma_bytes) / s.dma_cycles : 0.0;
            double gbs = per_cycle * j.clock_mhz * 1e6 / 1e9;
            double job_gbs =
                t.cycles ? static_cast<double>(s.dma_bytes) / t.cycles * j.clock_mhz / 1e3 : 0.0;
            o +=
                fmt::format("  DMA: {} bytes in {} instructions taking {} cycles: {:.1f} "
                            "bytes/cycle = {:.1f} GB/s while moving data, {:.1f} GB/s over "
                            "the whole job\n",
                            s.dma_bytes, s.dma_instructions, s.dma_cycles, per_cycle, gbs, job_gbs);
        } else {
            o += "  DMA: none\n";
        }
        o += fmt::format("  SBUF high-water: {} of {} bytes per partition ({:.1f}%)\n", t.sbuf_high,
                         s.sbuf_partition, pct(t.sbuf_high, s.sbuf_partition));
        o += fmt::format("  PSUM high-water: {} of {} bytes per partition ({:.1f}%)\n", t.psum_high,
                         s.psum_partition, pct(t.psum_high, s.psum_partition));
    }
    return o;
}

nlohmann::json export_chrome(const std::vector<neuron::ntrace::Job> &jobs) {
    using nlohmann::json;
    json events = json::array();
    uint64_t flow_id = 0;
    for (size_t k = 0; k < jobs.size(); k++) {
        const auto &j = jobs[k];
        neuron::Trace t = neuron::parse_trace(j.trace);
        auto prog = program_of(j);
        const neuron::Program *p = prog ? &*prog : nullptr;
        const int pid = static_cast<int>(k + 1);
        const double mhz = j.clock_mhz ? j.clock_mhz : 1.0;
        // Trace Event timestamps are microseconds.
        auto us = [&](uint64_t cycles) { return static_cast<double>(cycles) / mhz; };
        // A flow event binds to the slice that encloses it: inside, not on an edge.
        auto mid = [&](uint64_t a, uint64_t b) { return (us(a) + us(b)) / 2; };
        events.push_back({{"name", "process_name"},
                          {"ph", "M"},
                          {"pid", pid},
                          {"tid", 0},
                          {"args",
                           {{"name", fmt::format("job {}: {} on core {} (seqno {}, pid {})", k + 1,
                                                 p ? p->name() : "?", j.core, j.seqno, j.pid)}}}});
        events.push_back({{"name", "process_sort_index"},
                          {"ph", "M"},
                          {"pid", pid},
                          {"tid", 0},
                          {"args", {{"sort_index", pid}}}});
        for (unsigned e = 1; e <= neuron::num_engines; e++) {
            events.push_back({{"name", "thread_name"},
                              {"ph", "M"},
                              {"pid", pid},
                              {"tid", e},
                              {"args", {{"name", engine_name(static_cast<Engine>(e))}}}});
            events.push_back({{"name", "thread_sort_index"},
                              {"ph", "M"},
                              {"pid", pid},
                              {"tid", e},
                              {"args", {{"sort_index", e}}}});
        }
        uint32_t sbuf = 0, psum = 0;
        auto counter = [&](const char *name, uint64_t at, uint32_t v) {
            events.push_back({{"name", name},
                              {"ph", "C"},
                              {"pid", pid},
                              {"tid", 0},
                              {"ts", us(at)},
                              {"args", {{"bytes per partition", v}}}});
        };
        counter("SBUF high-water", 0, 0);
        counter("PSUM high-water", 0, 0);
        for (size_t i = 0; i < t.records.size(); i++) {
            const TraceRecord &r = t.records[i];
            const unsigned tid = static_cast<unsigned>(r.engine);
            json args = {{"record", i},
                         {"index", r.index},
                         {"instruction", insn_text(p, r.engine, r.index, r.opcode)},
                         {"start_cycle", r.start},
                         {"end_cycle", r.end},
                         {"cycles", r.end - r.start}};
            if (r.opcode == NEURON_OP_SEM_WAIT || r.opcode == NEURON_OP_SEM_SIGNAL)
                args["semaphore"] = sem_label(p, r.sem);
            if (r.opcode == NEURON_OP_SEM_WAIT)
                args["wait_cycles"] = r.wait;
            if (r.bytes)
                args["bytes"] = r.bytes;
            events.push_back({{"name", mnemonic(r.opcode)},
                              {"cat", "instruction"},
                              {"ph", "X"},
                              {"pid", pid},
                              {"tid", tid},
                              {"ts", us(r.start)},
                              {"dur", us(r.end - r.start)},
                              {"args", args}});
            if (r.opcode == NEURON_OP_SEM_WAIT && r.has_signal && r.signal < i) {
                const TraceRecord &g = t.records[r.signal];
                const std::string name = "release " + sem_label(p, r.sem);
                flow_id++;
                events.push_back({{"name", name},
                                  {"cat", "semaphore"},
                                  {"ph", "s"},
                                  {"id", flow_id},
                                  {"pid", pid},
                                  {"tid", static_cast<unsigned>(g.engine)},
                                  {"ts", mid(g.start, g.end)}});
                events.push_back({{"name", name},
                                  {"cat", "semaphore"},
                                  {"ph", "f"},
                                  {"bp", "e"},
                                  {"id", flow_id},
                                  {"pid", pid},
                                  {"tid", tid},
                                  {"ts", mid(r.start + r.wait, r.end)}});
            }
            if (r.sbuf_high != sbuf)
                counter("SBUF high-water", r.end, sbuf = r.sbuf_high);
            if (r.psum_high != psum)
                counter("PSUM high-water", r.end, psum = r.psum_high);
        }
    }
    return json{{"traceEvents", events},
                {"displayTimeUnit", "ns"},
                {"otherData",
                 {{"producer", "neuron-profile"},
                  {"format", "neuron .ntrace, exported as Trace Event format"},
                  {"jobs", jobs.size()}}}};
}

} // namespace nprof
