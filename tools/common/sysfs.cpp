// SPDX-License-Identifier: MIT
#include "neuron_tools/sysfs.hpp"

#include <neuron/device.hpp>

#include <charconv>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <system_error>

namespace neuron::tools {

namespace fs = std::filesystem;

Roots Roots::from_env() {
    Roots r;
    neuron::SysPaths p = neuron::SysPaths::from_env(); // the library's reading of the variables
    r.sys = p.sysfs_root;
    r.dev = p.dev_root;
    if (const char *v = std::getenv("NEURON_PROC_ROOT"); v && *v)
        r.proc = v;
    return r;
}

std::optional<std::string> read_file(const fs::path &path) {
    std::ifstream in(path, std::ios::binary);
    if (!in)
        return std::nullopt;
    std::ostringstream ss;
    ss << in.rdbuf();
    if (in.bad())
        return std::nullopt;
    return std::move(ss).str();
}

std::optional<std::string> read_text(const fs::path &path) {
    auto s = read_file(path);
    if (!s)
        return std::nullopt;
    while (!s->empty() && (s->back() == '\n' || s->back() == ' ' || s->back() == '\t' ||
                           s->back() == '\r' || s->back() == '\0'))
        s->pop_back();
    return s;
}

std::optional<uint64_t> parse_u64(std::string_view text) {
    uint64_t v = 0;
    if (text.empty())
        return std::nullopt;
    auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
    if (ec != std::errc() || ptr != text.data() + text.size())
        return std::nullopt;
    return v;
}

std::optional<uint64_t> read_u64(const fs::path &path) {
    auto s = read_text(path);
    if (!s)
        return std::nullopt;
    return parse_u64(*s);
}

std::optional<int64_t> read_i64(const fs::path &path) {
    auto s = read_text(path);
    if (!s || s->empty())
        return std::nullopt;
    int64_t v = 0;
    auto [ptr, ec] = std::from_chars(s->data(), s->data() + s->size(), v);
    if (ec != std::errc() || ptr != s->data() + s->size())
        return std::nullopt;
    return v;
}

} // namespace neuron::tools
