// SPDX-License-Identifier: MIT
// Shapes (Shape of graph.hpp: a size per axis): their text in messages,
// and index arithmetic on row-major arrays.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace neuron::compiler {

/// "[1, 128, 768]".
inline std::string shape_text(const std::vector<int64_t> &s) {
    return fmt::format("[{}]", fmt::join(s, ", "));
}

/// The index of element @p flat of a row-major array of shape @p s: one
/// coordinate per axis, the last axis fastest.
inline std::vector<int64_t> unravel(int64_t flat, const std::vector<int64_t> &s) {
    std::vector<int64_t> idx(s.size());
    for (size_t d = s.size(); d-- > 0;) {
        idx[d] = flat % s[d];
        flat /= s[d];
    }
    return idx;
}

} // namespace neuron::compiler
