// SPDX-License-Identifier: MIT
// Copies between the host and `neuron` tensors and between `neuron`
// tensors: DMA through pinned staging memory, in the current stream's
// order. A copy to the host waits for it; a copy to the device returns
// once the host's data is in staging memory.
#pragma once

#include <ATen/Tensor.h>

namespace neuron::torch_bridge {

/// copy_(dst, src) where either is a `neuron` tensor; returns @p dst.
at::Tensor copy_between(const at::Tensor &src, const at::Tensor &dst, bool non_blocking);

/// The value of a one-element `neuron` tensor (waits for it).
at::Scalar local_scalar(const at::Tensor &t);

/// @p t filled with @p value.
at::Tensor &fill(at::Tensor &t, const at::Scalar &value);

} // namespace neuron::torch_bridge
