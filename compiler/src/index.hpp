// SPDX-License-Identifier: MIT
// Index arithmetic on row-major arrays, shared by the lowering and the
// reference.
#pragma once

#include <cstdint>

#include <neuron/compiler/graph.hpp>

namespace neuron::compiler {

/// The index of element @p flat of a row-major array of shape @p s: one
/// coordinate per axis, the last axis fastest.
inline Shape unravel(int64_t flat, const Shape &s) {
    Shape idx(s.size());
    for (size_t d = s.size(); d-- > 0;) {
        idx[d] = flat % s[d];
        flat /= s[d];
    }
    return idx;
}

} // namespace neuron::compiler
