// SPDX-License-Identifier: MIT
#include "profile.hpp"

#include <algorithm>
#include <iterator>
#include <map>
#include <stdexcept>

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
std::string sem_label(const neuron::Program &p, uint32_t id) {
    for (const auto &s : p.symbols())
        if (s.kind == neuron::format::symbol_semaphore && s.offset == id)
            return fmt::format("{} (sem {})", s.name, id);
    return fmt::format("sem {}", id);
}

/// The disassembly of instruction @p index of @p e's stream, with names.
std::string insn_text(const neuron::Program &p, Engine e, uint32_t index, uint8_t opcode) {
    auto s = p.stream(e);
    if (static_cast<uint64_t>(index) * 64 + 64 > s.size())
        return fmt::format("{} (outside the program's {} stream)", mnemonic(opcode),
                           engine_name(e));
    return neuron::disassemble_instruction(s.subspan(static_cast<size_t>(index) * 64, 64), &p);
}

const std::string no_node = "(no node)";

/// The origin the program names for an instruction, or "".
std::string node_of(const neuron::Program &p, Engine e, uint32_t index) {
    const std::string *o = p.origin(e, index);
    return o ? *o : std::string();
}

double pct(uint64_t part, uint64_t whole) {
    return whole ? 100.0 * static_cast<double>(part) / static_cast<double>(whole) : 0.0;
}

size_t engine_slot(Engine e) {
    return static_cast<size_t>(e) - 1;
}

} // namespace

std::vector<HighWater> high_water(const neuron::Trace &t, bool sbuf) {
    std::vector<HighWater> raised;
    uint32_t v = 0;
    for (const TraceRecord &r : t.records)
        if (uint32_t nv = sbuf ? r.sbuf_high : r.psum_high; nv > v) {
            raised.push_back({r.end, nv});
            v = nv;
        }
    std::ranges::stable_sort(raised, {}, &HighWater::cycle);
    std::vector<HighWater> steps;
    for (const HighWater &h : raised) {
        if (!steps.empty() && h.bytes <= steps.back().bytes)
            continue;
        if (!steps.empty() && steps.back().cycle == h.cycle)
            steps.back().bytes = h.bytes;
        else
            steps.push_back(h);
    }
    return steps;
}

std::vector<HighWater> in_use(const neuron::Trace &t, const neuron::Program &p, bool sbuf) {
    using neuron::LiveRange;
    const auto kind = sbuf ? neuron::format::symbol_sbuf : neuron::format::symbol_psum;
    std::vector<const LiveRange *> ranges;
    for (const LiveRange &r : p.live_ranges())
        if (r.kind == kind)
            ranges.push_back(&r);
    if (ranges.empty())
        return {};
    // Each instruction's first start and last end over its executions.
    std::map<std::pair<unsigned, uint32_t>, std::pair<uint64_t, uint64_t>> when;
    for (const TraceRecord &r : t.records) {
        auto [it, fresh] =
            when.try_emplace({static_cast<unsigned>(r.engine), r.index}, std::pair{r.start, r.end});
        if (!fresh) {
            it->second.first = std::min(it->second.first, r.start);
            it->second.second = std::max(it->second.second, r.end);
        }
    }
    struct Event {
        uint64_t cycle;
        int64_t delta; // bytes per partition, negative: freed
        const LiveRange *range;
    };
    std::vector<Event> events;
    for (const LiveRange *r : ranges) {
        auto live = when.find({static_cast<unsigned>(r->live.engine), r->live.index});
        if (live == when.end())
            continue; // never ran (a cut trace)
        std::optional<uint64_t> end;
        for (unsigned e = 0; e < neuron::num_engines; e++)
            if (r->dead[e] != LiveRange::no_insn)
                if (auto d = when.find({e + 1, r->dead[e]}); d != when.end())
                    end = std::max(end.value_or(0), d->second.second);
        events.push_back({live->second.first, r->size, r});
        events.push_back(
            {std::max(end.value_or(t.cycles), live->second.first), -int64_t{r->size}, r});
    }
    // Frees first at a cycle: a range reused the moment another ends is
    // counted once.
    std::ranges::stable_sort(events, [](const Event &a, const Event &b) {
        return a.cycle != b.cycle ? a.cycle < b.cycle : a.delta < b.delta;
    });
    std::array<int64_t, NEURON_PARTITIONS> part{};
    std::vector<HighWater> steps;
    uint32_t level = 0;
    for (size_t i = 0; i < events.size();) {
        const uint64_t at = events[i].cycle;
        for (; i < events.size() && events[i].cycle == at; i++) {
            const LiveRange &r = *events[i].range;
            for (uint32_t q = r.part_start; q < r.part_start + r.part_count; q++)
                part[q] += events[i].delta;
        }
        const uint32_t now = static_cast<uint32_t>(*std::ranges::max_element(part));
        if (now != level)
            steps.push_back({at, now});
        level = now;
    }
    return steps;
}

JobSummary summarize(const neuron::ntrace::Job &job, size_t index, size_t top, size_t stalls) {
    JobSummary s;
    s.job = index;
    s.raw = &job;
    s.trace = neuron::parse_trace(job.trace);
    const neuron::Program &p = job.program;
    s.program = p.name();
    s.sbuf_partition = job.partitions ? job.sbuf_size / job.partitions : 0;
    s.psum_partition = job.partitions ? job.psum_size / job.partitions : 0;
    s.has_live = !p.live_ranges().empty();
    for (const HighWater &h : in_use(s.trace, p, true))
        s.sbuf_in_use = std::max(s.sbuf_in_use, h.bytes);
    for (const HighWater &h : in_use(s.trace, p, false))
        s.psum_in_use = std::max(s.psum_in_use, h.bytes);

    const auto &rs = s.trace.records;
    std::array<uint64_t, neuron::num_engines> last_end{};
    std::map<std::pair<int, uint32_t>, InsnCost> costs;
    const bool named = !p.origins().empty();
    std::map<std::string, NodeTime> nodes;
    for (size_t i = 0; i < rs.size(); i++) {
        const TraceRecord &r = rs[i];
        EngineTime &et = s.engines[engine_slot(r.engine)];
        uint64_t busy = r.end - r.start - r.wait;
        if (named) {
            const std::string *o = p.origin(r.engine, r.index);
            NodeTime &nt = nodes[o ? *o : no_node];
            nt.instructions++;
            nt.cycles[engine_slot(r.engine)] += r.end - r.start;
            nt.busy += busy;
            nt.waiting += r.wait;
        }
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
        c.node = node_of(p, c.engine, c.index);
        s.top.push_back(c);
    }
    for (auto &[name, nt] : nodes) {
        nt.name = name;
        s.nodes.push_back(nt);
    }
    std::stable_sort(s.nodes.begin(), s.nodes.end(),
                     [](const NodeTime &a, const NodeTime &b) { return a.busy > b.busy; });
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
        if (!s.nodes.empty()) {
            o += "  by graph node (cycles of its instructions on each engine, waits included; "
                 "with idle, each engine's column adds up to the job's cycles):\n";
            size_t w = 9;
            for (const auto &n : s.nodes)
                w = std::max(w, n.name.size());
            o += fmt::format("    {:<{}} {:>6} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9}\n", "node", w,
                             "insns", "tensor", "vector", "scalar", "sync", "busy", "waiting");
            for (const auto &n : s.nodes)
                o += fmt::format("    {:<{}} {:>6} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9}\n", n.name,
                                 w, n.instructions, n.cycles[0], n.cycles[1], n.cycles[2],
                                 n.cycles[3], n.busy, n.waiting);
            o += fmt::format("    {:<{}} {:>6} {:>9} {:>9} {:>9} {:>9}\n", "(idle)", w, "",
                             s.engines[0].idle, s.engines[1].idle, s.engines[2].idle,
                             s.engines[3].idle);
        }
        o += "  top instructions by cycles (busy cycles over all executions):\n";
        o += fmt::format("    {:>10} {:>6} {:>6}  {:<6} {:>6}  {}{}\n", "cycles", "share", "runs",
                         "engine", "index", s.nodes.empty() ? "" : "[node] ", "instruction");
        for (const auto &c : s.top)
            o += fmt::format("    {:>10} {:>5.1f}% {:>6}  {:<6} {:>6}  {}{}\n", c.cycles,
                             pct(c.cycles, t.cycles), c.runs, engine_name(c.engine),
                             fmt::format("#{}", c.index),
                             c.node.empty() ? "" : fmt::format("[{}] ", c.node), c.text);
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
        auto memory = [&](const char *name, uint32_t high, uint64_t size, uint32_t used) {
            o += fmt::format("  {} high-water: {} of {} bytes per partition ({:.1f}%)", name, high,
                             size, pct(high, size));
            if (s.has_live)
                o += fmt::format("; in use at most {} ({:.1f}%)", used, pct(used, size));
            o += "\n";
        };
        memory("SBUF", t.sbuf_high, s.sbuf_partition, s.sbuf_in_use);
        memory("PSUM", t.psum_high, s.psum_partition, s.psum_in_use);
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
        const neuron::Program &p = j.program;
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
                                                 p.name(), j.core, j.seqno, j.pid)}}}});
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
        auto counter = [&](const char *name, uint64_t at, uint32_t v) {
            events.push_back({{"name", name},
                              {"ph", "C"},
                              {"pid", pid},
                              {"tid", 0},
                              {"ts", us(at)},
                              {"args", {{"bytes per partition", v}}}});
        };
        // The counters in time order.
        counter("SBUF high-water", 0, 0);
        for (const HighWater &h : high_water(t, true))
            counter("SBUF high-water", h.cycle, h.bytes);
        counter("PSUM high-water", 0, 0);
        for (const HighWater &h : high_water(t, false))
            counter("PSUM high-water", h.cycle, h.bytes);
        // What the program says is in use, if it says (its LIVE ranges).
        if (!p.live_ranges().empty())
            for (bool sbuf : {true, false}) {
                const char *name = sbuf ? "SBUF in use" : "PSUM in use";
                counter(name, 0, 0);
                for (const HighWater &h : in_use(t, p, sbuf))
                    counter(name, h.cycle, h.bytes);
            }
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
            // Slices are named by the graph node when the program names one.
            const std::string node = node_of(p, r.engine, r.index);
            if (!node.empty())
                args["node"] = node;
            events.push_back(
                {{"name", node.empty() ? std::string(mnemonic(r.opcode))
                                       : fmt::format("{}: {}", node, mnemonic(r.opcode))},
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
        }
    }
    return json{{"traceEvents", events},
                {"displayTimeUnit", "ns"},
                {"otherData",
                 {{"producer", "neuron-profile"},
                  {"format", "neuron .ntrace, exported as Trace Event format"},
                  {"jobs", jobs.size()}}}};
}

namespace {

std::string xml_escape(const std::string &in) {
    std::string o;
    for (char c : in) {
        switch (c) {
        case '&':
            o += "&amp;";
            break;
        case '<':
            o += "&lt;";
            break;
        case '>':
            o += "&gt;";
            break;
        case '"':
            o += "&quot;";
            break;
        default:
            o += c;
        }
    }
    return o;
}

// A step of 1, 2 or 5 times a power of ten giving at most @p n ticks over @p span.
double tick_step(double span, int n) {
    double raw = span / n, p = 1;
    while (p * 10 <= raw)
        p *= 10;
    while (p > raw)
        p /= 10;
    for (double m : {1.0, 2.0, 5.0, 10.0})
        if (p * m >= raw)
            return p * m;
    return p * 10;
}

} // namespace

std::string export_svg(const std::vector<neuron::ntrace::Job> &jobs, size_t index) {
    if (index >= jobs.size())
        throw std::out_of_range(
            fmt::format("job {} does not exist: the file has {} job(s)", index + 1, jobs.size()));
    const auto &j = jobs[index];
    const JobSummary s = summarize(j, index, 0, 0);
    const neuron::Trace &t = s.trace;
    const neuron::Program &p = j.program;
    const double left = 80, width = 1200, top = 40, track = 26, box = 18;
    const double counter_top = top + neuron::num_engines * track + 20, counter_h = 60;
    const double axis_y = counter_top + counter_h + 14;
    const double legend_y = axis_y + 30;
    const double cycles = t.cycles ? static_cast<double>(t.cycles) : 1.0;
    const double mhz = j.clock_mhz ? j.clock_mhz : 1.0;
    auto x = [&](uint64_t c) { return left + static_cast<double>(c) / cycles * width; };
    auto track_y = [&](Engine e) { return top + (static_cast<double>(e) - 1) * track; };

    // Colours: the nodes by busy cycles, the first ten their own, the rest one.
    static const char *palette[] = {"#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2",
                                    "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#86bcb6"};
    static const char *engine_colour[] = {"#4e79a7", "#59a14f", "#f28e2b", "#b07aa1"};
    std::map<std::string, std::string> colour;
    size_t k = 0;
    for (const auto &n : s.nodes)
        if (n.name != no_node)
            colour[n.name] = k < std::size(palette) ? palette[k++] : "#bab0ac";
    const size_t legend_rows = (std::min<size_t>(colour.size(), std::size(palette) + 1) + 3) / 4;
    const double height = legend_y + 18 * static_cast<double>(legend_rows) + 10;

    std::string o;
    o += fmt::format("<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{:.0f}\" "
                     "height=\"{:.0f}\" viewBox=\"0 0 {:.0f} {:.0f}\" "
                     "font-family=\"sans-serif\" font-size=\"11\">\n",
                     left + width + 20, height, left + width + 20, height);
    o += "<defs><marker id=\"arrow\" viewBox=\"0 0 8 8\" refX=\"8\" refY=\"4\" "
         "markerWidth=\"6\" markerHeight=\"6\" orient=\"auto\"><path d=\"M0,0 L8,4 L0,8 z\" "
         "fill=\"#333\"/></marker></defs>\n";
    o += "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
    o +=
        fmt::format("<text class=\"title\" x=\"{}\" y=\"20\" font-size=\"13\">{}</text>\n", left,
                    xml_escape(fmt::format("job {}: {} on core {}: {} cycles = {:.1f} us, {} "
                                           "instructions",
                                           index + 1, s.program, j.core, t.cycles,
                                           static_cast<double>(t.cycles) / mhz, t.records.size())));
    for (unsigned e = 1; e <= neuron::num_engines; e++) {
        const double y = track_y(static_cast<Engine>(e));
        o += fmt::format("<text class=\"track\" x=\"6\" y=\"{:.1f}\">{}</text>\n", y + 13,
                         engine_name(static_cast<Engine>(e)));
        o += fmt::format("<rect x=\"{}\" y=\"{:.1f}\" width=\"{}\" height=\"{}\" "
                         "fill=\"#f4f4f4\"/>\n",
                         left, y, width, box);
    }
    for (size_t i = 0; i < t.records.size(); i++) {
        const TraceRecord &r = t.records[i];
        const double y = track_y(r.engine);
        const std::string node = node_of(p, r.engine, r.index);
        const std::string fill = !node.empty() && colour.count(node)
                                     ? colour[node]
                                     : engine_colour[engine_slot(r.engine)];
        if (r.wait)
            o += fmt::format("<rect class=\"wait\" x=\"{:.2f}\" y=\"{:.1f}\" width=\"{:.2f}\" "
                             "height=\"{}\" fill=\"#d0d0d0\"/>\n",
                             x(r.start), y + box / 3, x(r.start + r.wait) - x(r.start), box / 3);
        const double x0 = x(r.start + r.wait), x1 = x(r.end);
        o += fmt::format(
            "<rect class=\"slice\" x=\"{:.2f}\" y=\"{:.1f}\" width=\"{:.2f}\" height=\"{}\" "
            "fill=\"{}\"><title>{}</title></rect>\n",
            x0, y, std::max(x1 - x0, 0.3), box, fill,
            xml_escape(fmt::format("{}{} #{}: {} (cycles {}..{})", node.empty() ? "" : node + ": ",
                                   engine_name(r.engine), r.index,
                                   insn_text(p, r.engine, r.index, r.opcode), r.start, r.end)));
    }
    // The arrows: from the signal's end to where the wait was released.
    for (const TraceRecord &r : t.records)
        if (r.opcode == NEURON_OP_SEM_WAIT && r.has_signal && r.signal < t.records.size()) {
            const TraceRecord &g = t.records[r.signal];
            o += fmt::format("<line class=\"flow\" x1=\"{:.2f}\" y1=\"{:.1f}\" x2=\"{:.2f}\" "
                             "y2=\"{:.1f}\" stroke=\"#333\" stroke-width=\"0.7\" "
                             "marker-end=\"url(#arrow)\"/>\n",
                             x(g.end), track_y(g.engine) + box / 2, x(r.start + r.wait),
                             track_y(r.engine) + box / 2);
        }
    // The high-water marks, in percent of a partition.
    o += fmt::format("<text class=\"track\" x=\"6\" y=\"{:.1f}\">SBUF/PSUM</text>\n",
                     counter_top + 13);
    o += fmt::format("<rect x=\"{}\" y=\"{:.1f}\" width=\"{}\" height=\"{}\" fill=\"none\" "
                     "stroke=\"#ccc\"/>\n",
                     left, counter_top, width, counter_h);
    auto counter = [&](const char *name, const char *stroke, uint64_t size, bool sbuf) {
        std::string pts = fmt::format("{:.2f},{:.1f}", x(0), counter_top + counter_h);
        uint32_t v = 0;
        auto yv = [&](uint32_t val) {
            return counter_top + counter_h -
                   (size ? static_cast<double>(val) / static_cast<double>(size) : 0) * counter_h;
        };
        for (const HighWater &h : high_water(t, sbuf)) {
            pts += fmt::format(" {:.2f},{:.1f} {:.2f},{:.1f}", x(h.cycle), yv(v), x(h.cycle),
                               yv(h.bytes));
            v = h.bytes;
        }
        pts += fmt::format(" {:.2f},{:.1f}", x(t.cycles), yv(v));
        o += fmt::format(
            "<polyline class=\"counter\" points=\"{}\" fill=\"none\" "
            "stroke=\"{}\" stroke-width=\"1.5\"><title>{}</title></polyline>\n",
            pts, stroke,
            xml_escape(fmt::format("{} high-water: {} of {} bytes per partition", name, v, size)));
        return v;
    };
    uint32_t sb = counter("SBUF", "#1f77b4", s.sbuf_partition, true);
    uint32_t ps = counter("PSUM", "#d62728", s.psum_partition, false);
    // In use, by the program's live ranges: thin lines under the marks.
    if (s.has_live)
        for (bool sbuf : {true, false}) {
            const uint64_t size = sbuf ? s.sbuf_partition : s.psum_partition;
            auto yv = [&](uint32_t val) {
                return counter_top + counter_h -
                       (size ? static_cast<double>(val) / static_cast<double>(size) : 0) *
                           counter_h;
            };
            std::string pts = fmt::format("{:.2f},{:.1f}", x(0), yv(0));
            uint32_t v = 0;
            for (const HighWater &h : in_use(t, j.program, sbuf)) {
                pts += fmt::format(" {:.2f},{:.1f} {:.2f},{:.1f}", x(h.cycle), yv(v), x(h.cycle),
                                   yv(h.bytes));
                v = h.bytes;
            }
            pts += fmt::format(" {:.2f},{:.1f}", x(t.cycles), yv(v));
            o += fmt::format(
                "<polyline class=\"in-use\" points=\"{}\" fill=\"none\" stroke=\"{}\" "
                "stroke-width=\"0.8\" stroke-dasharray=\"3,2\"><title>{}</title></polyline>\n",
                pts, sbuf ? "#1f77b4" : "#d62728",
                xml_escape(fmt::format("{} in use: at most {} of {} bytes per partition",
                                       sbuf ? "SBUF" : "PSUM", sbuf ? s.sbuf_in_use : s.psum_in_use,
                                       size)));
        }
    o += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" fill=\"#1f77b4\">SBUF {:.1f}%</text>\n",
                     left + width - 150, counter_top + 12, pct(sb, s.sbuf_partition));
    o += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" fill=\"#d62728\">PSUM {:.1f}%</text>\n",
                     left + width - 70, counter_top + 12, pct(ps, s.psum_partition));
    // The time axis, in microseconds.
    const double us = static_cast<double>(t.cycles) / mhz, step = tick_step(us, 10);
    o += fmt::format("<line x1=\"{}\" y1=\"{:.1f}\" x2=\"{}\" y2=\"{:.1f}\" stroke=\"#333\"/>\n",
                     left, axis_y, left + width, axis_y);
    for (double v = 0; v <= us + 1e-9 && step > 0; v += step) {
        const double xv = left + (us > 0 ? v / us : 0) * width;
        o += fmt::format("<line class=\"tick\" x1=\"{:.2f}\" y1=\"{:.1f}\" x2=\"{:.2f}\" "
                         "y2=\"{:.1f}\" stroke=\"#333\"/><text x=\"{:.2f}\" y=\"{:.1f}\" "
                         "text-anchor=\"middle\">{:g} us</text>\n",
                         xv, axis_y, xv, axis_y + 4, xv, axis_y + 16, v);
    }
    // The legend: the nodes' colours.
    size_t n = 0;
    bool other = false;
    for (const auto &nt : s.nodes) {
        if (nt.name == no_node)
            continue;
        if (n >= std::size(palette)) {
            other = true;
            continue;
        }
        const double lx = left + static_cast<double>(n % 4) * 300,
                     ly = legend_y + static_cast<double>(n / 4) * 18;
        o += fmt::format("<rect class=\"legend\" x=\"{:.0f}\" y=\"{:.0f}\" width=\"10\" "
                         "height=\"10\" fill=\"{}\"/><text x=\"{:.0f}\" y=\"{:.0f}\">{}</text>\n",
                         lx, ly, colour[nt.name], lx + 14, ly + 9, xml_escape(nt.name));
        n++;
    }
    if (other) {
        const double lx = left + static_cast<double>(n % 4) * 300,
                     ly = legend_y + static_cast<double>(n / 4) * 18;
        o += fmt::format("<rect class=\"legend\" x=\"{:.0f}\" y=\"{:.0f}\" width=\"10\" "
                         "height=\"10\" fill=\"#bab0ac\"/><text x=\"{:.0f}\" y=\"{:.0f}\">"
                         "other nodes</text>\n",
                         lx, ly, lx + 14, ly + 9);
    }
    o += "</svg>\n";
    return o;
}

} // namespace nprof
