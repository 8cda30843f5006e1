// SPDX-License-Identifier: MIT
// A checker of the Trace Event format (the JSON chrome://tracing and
// Perfetto load), from the format's specification ("Trace Event Format",
// the Catapult project's document): the object form's keys, the fields
// every event needs and those each phase ("ph") adds, the metadata events'
// arguments, counters' numeric arguments, and flow events paired by id and
// bound to a slice of their thread.
//
// A checker rather than a JSON schema: which fields are required depends on
// "ph", and the flow and slice rules relate events to each other, which the
// JSON schema subset the other tools' tests check (json_schema.hpp) cannot
// say; neither is there an official schema of the format to check in.
#pragma once

#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include <nlohmann/json.hpp>

namespace trace_check {

using nlohmann::json;

/// The problems found, one per line; "" when @p doc is a valid trace.
inline std::string check(const json &doc) {
    std::string out;
    auto bad = [&](const std::string &where, const std::string &what) {
        out += where + ": " + what + "\n";
    };
    if (!doc.is_object() || !doc.contains("traceEvents") || !doc["traceEvents"].is_array()) {
        bad("$", "the object form needs a \"traceEvents\" array");
        return out;
    }
    if (doc.contains("displayTimeUnit") &&
        !(doc["displayTimeUnit"] == "ms" || doc["displayTimeUnit"] == "ns"))
        bad("$.displayTimeUnit", "must be \"ms\" or \"ns\"");
    if (doc.contains("otherData") && !doc["otherData"].is_object())
        bad("$.otherData", "must be an object");

    struct Slice {
        double ts, end;
    };
    std::map<std::pair<long long, long long>, std::vector<Slice>> slices; // (pid, tid)
    struct Flow {
        int starts = 0, finishes = 0;
        double s_ts = 0, f_ts = 0;
        long long s_pid = 0, s_tid = 0, f_pid = 0, f_tid = 0;
        std::string where;
    };
    std::map<std::string, Flow> flows; // by cat and id
    const json &ev = doc["traceEvents"];
    for (size_t i = 0; i < ev.size(); i++) {
        const json &e = ev[i];
        const std::string w = "$.traceEvents[" + std::to_string(i) + "]";
        if (!e.is_object()) {
            bad(w, "an event is an object");
            continue;
        }
        if (!e.contains("ph") || !e["ph"].is_string() || e["ph"].get<std::string>().size() != 1) {
            bad(w, "\"ph\" (one character) is required");
            continue;
        }
        const std::string ph = e["ph"];
        if (!e.contains("name") || !e["name"].is_string())
            bad(w, "\"name\" (a string) is required");
        for (const char *k : {"pid", "tid"})
            if (!e.contains(k) || !e[k].is_number_integer())
                bad(w, std::string("\"") + k + "\" (an integer) is required");
        if (ph != "M" && (!e.contains("ts") || !e["ts"].is_number()))
            bad(w, "\"ts\" (a number, microseconds) is required for ph " + ph);
        if (e.contains("cat") && !e["cat"].is_string())
            bad(w, "\"cat\" must be a string");
        if (e.contains("args") && !e["args"].is_object())
            bad(w, "\"args\" must be an object");
        if (!out.empty() && out.find(w + ":") != std::string::npos)
            continue;
        const long long pid = e["pid"], tid = e["tid"];
        if (ph == "X") {
            if (!e.contains("dur") || !e["dur"].is_number() || e["dur"].get<double>() < 0)
                bad(w, "a complete event (X) needs \"dur\" >= 0");
            else
                slices[{pid, tid}].push_back(
                    {e["ts"], e["ts"].get<double>() + e["dur"].get<double>()});
        } else if (ph == "C") {
            if (!e.contains("args") || !e["args"].is_object() || e["args"].empty())
                bad(w, "a counter event (C) needs \"args\" with its series");
            else
                for (const auto &[k, v] : e["args"].items())
                    if (!v.is_number())
                        bad(w, "counter series \"" + k + "\" is not a number");
        } else if (ph == "M") {
            static const std::map<std::string, std::pair<std::string, bool>> meta = {
                {"process_name", {"name", false}},
                {"process_labels", {"labels", false}},
                {"thread_name", {"name", false}},
                {"process_sort_index", {"sort_index", true}},
                {"thread_sort_index", {"sort_index", true}}};
            auto it = e.contains("name") ? meta.find(e["name"]) : meta.end();
            if (it == meta.end()) {
                bad(w, "unknown metadata event");
            } else {
                const auto &[arg, numeric] = it->second;
                if (!e.contains("args") || !e["args"].contains(arg) ||
                    (numeric ? !e["args"][arg].is_number() : !e["args"][arg].is_string()))
                    bad(w, "metadata " + it->first + " needs args." + arg);
            }
        } else if (ph == "s" || ph == "t" || ph == "f") {
            if (!e.contains("id") || !(e["id"].is_number_integer() || e["id"].is_string())) {
                bad(w, "a flow event needs \"id\"");
                continue;
            }
            if (e.contains("bp") && e["bp"] != "e")
                bad(w, "\"bp\" can only be \"e\"");
            std::string key = e.value("cat", "") + "/" + e["id"].dump();
            Flow &f = flows[key];
            if (ph == "s") {
                f.starts++;
                f.s_ts = e["ts"];
                f.s_pid = pid;
                f.s_tid = tid;
                f.where = w;
            } else if (ph == "f") {
                f.finishes++;
                f.f_ts = e["ts"];
                f.f_pid = pid;
                f.f_tid = tid;
            }
        } else if (ph != "B" && ph != "E" && ph != "i" && ph != "I" && ph != "b" && ph != "e" &&
                   ph != "n" && ph != "P" && ph != "O" && ph != "N" && ph != "D") {
            bad(w, "unknown phase \"" + ph + "\"");
        }
    }
    // Complete events of one thread nest or follow each other.
    const double eps = 1e-6;
    for (auto &[key, v] : slices) {
        std::sort(v.begin(), v.end(), [](const Slice &a, const Slice &b) { return a.ts < b.ts; });
        for (size_t i = 1; i < v.size(); i++)
            if (v[i].ts < v[i - 1].end - eps && v[i].end > v[i - 1].end + eps)
                bad("pid " + std::to_string(key.first) + " tid " + std::to_string(key.second),
                    "slices at " + std::to_string(v[i - 1].ts) + " and " + std::to_string(v[i].ts) +
                        " overlap without nesting");
    }
    auto inside_slice = [&](long long pid, long long tid, double ts) {
        auto it = slices.find({pid, tid});
        if (it == slices.end())
            return false;
        for (const auto &s : it->second)
            if (s.ts - eps <= ts && ts <= s.end + eps)
                return true;
        return false;
    };
    for (const auto &[key, f] : flows) {
        if (f.starts != 1 || f.finishes != 1) {
            bad("flow " + key, "needs one start (s) and one finish (f), has " +
                                   std::to_string(f.starts) + " and " + std::to_string(f.finishes));
            continue;
        }
        if (f.f_ts < f.s_ts)
            bad("flow " + key, "finishes before it starts");
        if (!inside_slice(f.s_pid, f.s_tid, f.s_ts) || !inside_slice(f.f_pid, f.f_tid, f.f_ts))
            bad("flow " + key, "an end is not inside a slice of its thread");
    }
    return out;
}

} // namespace trace_check
