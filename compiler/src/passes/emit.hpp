// SPDX-License-Identifier: MIT
// The emission pass: every group's instructions, in graph order, once per
// chunk of rows.
#pragma once

#include "emitter.hpp"
#include "fuse.hpp"

namespace neuron::compiler::lower {

/// Records the program of @p fusion into @p e; the kernel's statistics.
Kernel::Stats emit(Emitter &e, const FusionPlan &fusion);

} // namespace neuron::compiler::lower
