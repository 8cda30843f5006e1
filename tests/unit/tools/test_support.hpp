// SPDX-License-Identifier: MIT
// Golden files and option lists for the tools' tests.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>

namespace support {

namespace fs = std::filesystem;

inline std::string slurp(const fs::path &p) {
    std::ifstream in(p, std::ios::binary);
    std::ostringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

/// Compares `actual` with golden/<name> in the source tree; with
/// NEURON_UPDATE_GOLDEN=1 in the environment, rewrites the file instead.
inline bool golden(const std::string &name, const std::string &actual) {
    fs::path p = fs::path(NEURON_TOOLS_TEST_DIR) / "golden" / name;
    const char *update = std::getenv("NEURON_UPDATE_GOLDEN");
    if (update && std::string(update) == "1") {
        fs::create_directories(p.parent_path());
        std::ofstream(p, std::ios::binary) << actual;
        return true;
    }
    if (!fs::exists(p)) {
        std::fprintf(stderr, "golden file %s is missing (NEURON_UPDATE_GOLDEN=1 writes it)\n",
                     p.c_str());
        return false;
    }
    std::string want = slurp(p);
    if (want == actual)
        return true;
    std::fprintf(stderr, "output differs from %s\n--- expected\n%s--- actual\n%s---\n", p.c_str(),
                 want.c_str(), actual.c_str());
    return false;
}

/// Every long option (--name) mentioned in a text; in roff, "\-" is a dash.
inline std::set<std::string> long_options(std::string text) {
    text = std::regex_replace(text, std::regex(R"(\\-)"), "-");
    text = std::regex_replace(text, std::regex(R"(\\f[BIRP])"), "");
    std::set<std::string> out;
    std::regex re(R"((^|[^A-Za-z0-9-])(--[a-z][a-z0-9-]*))");
    for (auto it = std::sregex_iterator(text.begin(), text.end(), re); it != std::sregex_iterator();
         ++it)
        out.insert((*it)[2].str());
    return out;
}

/// The long options of the OPTIONS section of a man page (.SH OPTIONS up to
/// the next .SH).
inline std::set<std::string> man_options(const fs::path &page) {
    std::string text = slurp(page);
    size_t begin = text.find(".SH OPTIONS");
    size_t end = text.find("\n.SH ", begin + 1);
    if (begin == std::string::npos)
        return {};
    return long_options(
        text.substr(begin, end == std::string::npos ? std::string::npos : end - begin));
}

inline std::string join(const std::set<std::string> &s) {
    std::string out;
    for (const auto &x : s)
        out += x + " ";
    return out;
}

} // namespace support
