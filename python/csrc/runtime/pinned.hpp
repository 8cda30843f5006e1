// SPDX-License-Identifier: MIT
// Pinned host memory of the `neuron` device (tensor.pin_memory(),
// DataLoader(pin_memory=True), the host tensor of a non_blocking copy to
// the host): host memory the device's DMA reaches (the staging pool's
// kind, of the first index's core), so that a non_blocking copy from or to
// it is one DMA transfer in the stream's order, without staging and
// without waiting, as CUDA's copies from and to pinned memory are.
#pragma once

#include <cstdint>
#include <optional>

#include <ATen/core/CachingHostAllocator.h>
#include <c10/core/Allocator.h>

#include <neuron/neuron.hpp>

namespace neuron::torch_bridge {

/// The allocator torch's hooks hand out for pinned memory.
c10::Allocator &pinned_allocator();
/// The same, as torch's host allocator of the device
/// (torch.accelerator.empty_host_cache, host memory statistics).
at::HostAllocator &pinned_host_allocator();

/// The device's view of pinned bytes [@p data, @p data + @p size), when
/// they lie in one pinned allocation.
std::optional<BufferRange> pinned_range(const void *data, uint64_t size);

} // namespace neuron::torch_bridge
