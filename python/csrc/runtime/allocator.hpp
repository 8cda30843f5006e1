// SPDX-License-Identifier: MIT
// The caching allocator of `neuron` tensors: device memory of each index's
// core, carved by libneuron's SubAllocator from large buffers it keeps.
// A freed block is reused at once by work of the stream that allocated it
// (that work runs after the work that used it); a block also used on
// other streams (record_stream) waits until their work up to the free
// completed. A tensor's data pointer is an address in a space of this
// process's own (never dereferenced by the host): the block's chunk and
// offset, so that distinct live storages never share one.
#pragma once

#include <cstdint>

#include <ATen/Tensor.h>
#include <c10/core/CachingDeviceAllocator.h>

#include <neuron/neuron.hpp>

namespace neuron::torch_bridge {

/// The allocator registered for the `neuron` device type.
c10::DeviceAllocator &device_allocator();

/// Bytes [@p first, @p first + @p size) of @p t's storage (not of its
/// view): what copies and jobs bind. @p t must be a `neuron` tensor.
BufferRange storage_range(const at::Tensor &t, uint64_t first, uint64_t size);

/// The bytes of @p t's elements, from its first: for a contiguous tensor,
/// exactly its data.
BufferRange tensor_range(const at::Tensor &t);

/// Gives @p storage at least @p bytes, keeping its contents (resize_).
void grow_storage(c10::StorageImpl &storage, uint64_t bytes);

/// At most @p bytes of device memory reserved by the cache of @p index
/// (0: no limit but the device's); an allocation beyond it empties the
/// cache, retries, then raises torch.OutOfMemoryError.
void set_memory_limit(c10::DeviceIndex index, uint64_t bytes);

/// Host memory for staging copies (pinned, the device's DMA reaches it).
Allocation staging_memory(c10::DeviceIndex index, uint64_t bytes);
/// Releases the empty chunks of every index's staging memory.
void empty_staging_cache();

} // namespace neuron::torch_bridge
