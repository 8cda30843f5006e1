// SPDX-License-Identifier: MIT
#include "neuron_tools/format.hpp"

#include <algorithm>
#include <fmt/format.h>

namespace neuron::tools {

std::string human_bytes(uint64_t bytes) {
    static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
    if (bytes < 1024)
        return fmt::format("{} B", bytes);
    double v = static_cast<double>(bytes);
    size_t u = 0;
    while (v >= 1024.0 && u + 1 < std::size(units)) {
        v /= 1024.0;
        u++;
    }
    return fmt::format("{:.1f} {}", v, units[u]);
}

std::string human_bytes(const std::optional<uint64_t> &bytes) {
    return bytes ? human_bytes(*bytes) : "-";
}

std::string human_rate(double bytes_per_s) {
    if (bytes_per_s < 0)
        bytes_per_s = 0;
    return human_bytes(static_cast<uint64_t>(bytes_per_s + 0.5)) + "/s";
}

std::string join_list(const std::vector<unsigned> &v) {
    if (v.empty())
        return "-";
    std::string s;
    for (size_t i = 0; i < v.size(); i++) {
        if (i)
            s += ',';
        s += std::to_string(v[i]);
    }
    return s;
}

std::string format_columns(const std::vector<std::vector<std::string>> &rows,
                           const std::string &indent) {
    std::vector<size_t> width;
    for (const auto &r : rows)
        for (size_t i = 0; i < r.size(); i++) {
            if (width.size() <= i)
                width.resize(i + 1, 0);
            width[i] = std::max(width[i], r[i].size());
        }
    std::string out;
    for (const auto &r : rows) {
        std::string line = indent;
        for (size_t i = 0; i < r.size(); i++) {
            line += r[i];
            if (i + 1 < r.size())
                line += std::string(width[i] - r[i].size() + 2, ' ');
        }
        while (!line.empty() && line.back() == ' ')
            line.pop_back();
        out += line;
        out += '\n';
    }
    return out;
}

} // namespace neuron::tools
