// SPDX-License-Identifier: MIT
// The fusion pass: which nodes run together as one group, and how.
#pragma once

#include <vector>

#include "../lowering.hpp"

namespace neuron::compiler::lower {

/// Per node: the group it starts (Kind::none for a node fused into
/// another group, an input or a constant).
struct FusionPlan {
    std::vector<Group> groups;
};

/// Matmul epilogues: bias (a row vector added), literal affine steps and
/// one activation, or a same-shape residual add; chains of unary
/// elementwise nodes; chains of data movement as one gather. A node is
/// folded into its producer's group only when the producer's value is used
/// by it alone and is not an output. With @p enabled false, every node is
/// its own group.
FusionPlan fuse(const Graph &g, const Usage &usage, bool enabled);

} // namespace neuron::compiler::lower
