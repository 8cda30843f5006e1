// SPDX-License-Identifier: MIT
#include "copy.hpp"

#include <algorithm>
#include <cstring>
#include <memory>
#include <optional>
#include <vector>

#include <ATen/ATen.h>
#include <ATen/MemoryOverlap.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <c10/core/DeviceGuard.h>
#include <c10/util/Exception.h>

#include "allocator.hpp"
#include "pinned.hpp"
#include "streams.hpp"

namespace neuron::torch_bridge {

namespace {

/// The elements of @p t's storage its view covers: [first, first + count).
struct Extent {
    int64_t first = 0;
    int64_t count = 0;
};

Extent extent_of(const at::Tensor &t) {
    if (t.numel() == 0)
        return {t.storage_offset(), 0};
    int64_t lo = t.storage_offset(), hi = t.storage_offset();
    for (int64_t d = 0; d < t.dim(); d++) {
        const int64_t reach = (t.size(d) - 1) * t.stride(d);
        (reach < 0 ? lo : hi) += reach;
    }
    return {lo, hi - lo + 1};
}

bool dense(const at::Tensor &t) {
    return t.is_contiguous();
}

/// Whether @p a and @p b lie alike in memory: both contiguous, or the same
/// permutation of dense memory (then the bytes of their extents match).
bool same_layout(const at::Tensor &a, const at::Tensor &b) {
    return (dense(a) && dense(b)) ||
           (a.is_non_overlapping_and_dense() && a.strides() == b.strides());
}

/// The floating dtypes the device computes in.
bool computed_dtype(const at::Tensor &t) {
    return t.scalar_type() == at::kFloat || t.scalar_type() == at::kBFloat16;
}

/// When @p t is its storage's elements in another order of its axes (a
/// transposed or permuted view of dense memory) of a dtype the device
/// computes in: the axes @p t's memory is contiguous in, outermost first.
std::optional<std::vector<int64_t>> memory_order(const at::Tensor &t) {
    if (t.dim() < 2 || !t.is_non_overlapping_and_dense() || !computed_dtype(t))
        return std::nullopt;
    std::vector<int64_t> order(t.dim());
    for (int64_t d = 0; d < t.dim(); d++)
        order[d] = d;
    std::stable_sort(order.begin(), order.end(),
                     [&](int64_t a, int64_t b) { return t.stride(a) > t.stride(b); });
    if (!t.permute(order).is_contiguous())
        return std::nullopt;
    return order;
}

StreamState &current(const at::Tensor &t) {
    return stream_state(current_stream(t.device().index()));
}

/// Whether device kernels move elements of @p type (all but one-byte
/// dtypes: torch_neuronx/strided.py moves them as bits of a dtype they
/// compute in).
bool moved_on_device(at::ScalarType type) {
    return c10::elementSize(type) > 1;
}

/// @p t as a new contiguous tensor, copied by device kernels in the
/// stream's order (torch_neuronx/strided.py).
at::Tensor contiguous_on_device(const at::Tensor &t) {
    static const auto op = c10::Dispatcher::singleton()
                               .findSchemaOrThrow("neuron::strided_contiguous", "")
                               .typed<at::Tensor(const at::Tensor &)>();
    return op.call(t);
}

/// Writes @p value (contiguous, of @p dst's dtype and sizes) into the
/// strided `neuron` tensor @p dst by device kernels and DMA in the
/// stream's order, the bytes between its elements kept
/// (torch_neuronx/strided.py).
void write_strided(const at::Tensor &dst, const at::Tensor &value) {
    static const auto op = c10::Dispatcher::singleton()
                               .findSchemaOrThrow("neuron::strided_write", "")
                               .typed<void(const at::Tensor &, const at::Tensor &)>();
    op.call(dst, value);
}

/// The contiguous `neuron` tensor @p t converted to @p dtype (float32 or
/// bfloat16) by the device's kernel of neuron::cast (defined and lowered
/// by torch_neuronx.casts).
at::Tensor cast(const at::Tensor &t, at::ScalarType dtype) {
    static const auto op = c10::Dispatcher::singleton()
                               .findSchemaOrThrow("neuron::cast", "")
                               .typed<at::Tensor(const at::Tensor &, at::ScalarType)>();
    return t.dim() == 0 ? op.call(t.view({1}), dtype).view({}) : op.call(t, dtype);
}

/// A conversion between fp32 and bf16 (x.to(torch.bfloat16), autocast's
/// casts) of @p src into @p dst of one device and shape: cast() and
/// a DMA copy of its result, in the stream's order. @p dst contiguous, or
/// laid out as @p src is (a permuted view keeps its layout through .to()):
/// then both are taken in their memory's order. False, doing nothing, for
/// other copies.
bool cast_on_device(const at::Tensor &src, const at::Tensor &dst) {
    if (src.scalar_type() == dst.scalar_type() || !computed_dtype(src) || !computed_dtype(dst) ||
        src.sizes() != dst.sizes() || src.dim() == 0 || src.device() != dst.device())
        return false;
    at::Tensor from = src, to = dst;
    if (!dense(dst)) {
        const auto order = dst.strides() == src.strides() ? memory_order(dst) : std::nullopt;
        if (!order)
            return false;
        from = src.permute(*order);
        to = dst.permute(*order);
    }
    // A permuted view of another layout is permuted on the device first.
    at::Tensor converted = cast(dense(from) ? from : from.contiguous(), dst.scalar_type());
    const BufferRange range = tensor_range(converted);
    current(dst).copy(tensor_range(to), range, std::move(converted));
    return true;
}

/// @p t's covered storage bytes on the host, and a view of them as @p t.
struct HostImage {
    Allocation memory;
    at::Tensor view;
};

/// Copies the storage @p t covers into staging memory and waits: the view
/// has @p t's sizes and strides.
HostImage read_to_host(const at::Tensor &t) {
    const Extent e = extent_of(t);
    const uint64_t isz = t.element_size();
    HostImage img{staging_memory(t.device().index(), std::max<uint64_t>(e.count * isz, 1)), {}};
    StreamState &s = current(t);
    if (e.count > 0) {
        s.copy(img.memory.range(), storage_range(t, e.first * isz, e.count * isz));
        s.synchronize();
    }
    std::byte *base = img.memory.map().data();
    img.view = at::from_blob(base + (t.storage_offset() - e.first) * isz, t.sizes(), t.strides(),
                             t.options().device(at::kCPU));
    return img;
}

/// Writes @p src (a CPU tensor, cast and broadcast to @p dst) into the
/// contiguous `neuron` tensor @p dst.
void write_dense(const at::Tensor &dst, const at::Tensor &src) {
    const uint64_t n = dst.nbytes();
    if (n == 0)
        return;
    Allocation st = staging_memory(dst.device().index(), n);
    at::from_blob(st.map().data(), dst.sizes(), dst.options().device(at::kCPU)).copy_(src);
    const BufferRange from = st.range();
    current(dst).copy(tensor_range(dst), from, std::make_shared<Allocation>(std::move(st)));
}

/// Writes the host image's storage bytes back over @p dst's extent.
void write_extent(const at::Tensor &dst, HostImage &img) {
    const Extent e = extent_of(dst);
    if (e.count == 0)
        return;
    const uint64_t isz = dst.element_size();
    BufferRange src = img.memory.range();
    src.size = e.count * isz;
    current(dst).copy(storage_range(dst, e.first * isz, e.count * isz), src,
                      std::make_shared<Allocation>(std::move(img.memory)));
}

void to_host(const at::Tensor &src, const at::Tensor &dst) {
    HostImage img = read_to_host(src);
    const_cast<at::Tensor &>(dst).copy_(img.view);
}

void to_device(const at::Tensor &src, const at::Tensor &dst) {
    if (dense(dst)) {
        write_dense(dst, src);
        return;
    }
    if (moved_on_device(dst.scalar_type())) {
        // A strided destination: the values uploaded dense, then written
        // into it on the device.
        at::Tensor value = at::empty(dst.sizes(), dst.options());
        write_dense(value, src);
        write_strided(dst, value);
        return;
    }
    // One of a one-byte dtype: its covered bytes are read, written on the
    // host and written back (the bytes between its elements are kept).
    HostImage img = read_to_host(dst);
    img.view.copy_(src);
    write_extent(dst, img);
}

/// A non_blocking copy between a `neuron` tensor and pinned memory of the
/// same dtype and shape, both contiguous: one DMA transfer in the stream's
/// order, neither staged nor waited for (the host synchronizes before it
/// reads or writes the pinned tensor, as with CUDA). False when it is not
/// one.
bool copy_pinned(const at::Tensor &src, const at::Tensor &dst) {
    const bool to_device = dst.device().is_privateuseone();
    const at::Tensor &host = to_device ? src : dst;
    const at::Tensor &device = to_device ? dst : src;
    if (!host.device().is_cpu() || !host.is_contiguous() || !dense(device) ||
        host.scalar_type() != device.scalar_type() || host.sizes() != device.sizes())
        return false;
    const std::optional<BufferRange> pinned = pinned_range(host.data_ptr(), host.nbytes());
    if (!pinned)
        return false;
    const BufferRange on_device = tensor_range(device);
    current(device).copy(to_device ? on_device : *pinned, to_device ? *pinned : on_device,
                         host.storage());
    return true;
}

/// Whether @p a and @p b share bytes of one storage, not all of them
/// (one DMA copy between them is refused).
bool overlap(const at::Tensor &a, const at::Tensor &b) {
    if (!a.storage().is_alias_of(b.storage()))
        return false;
    const Extent x = extent_of(a), y = extent_of(b);
    const int64_t ax = x.first * a.element_size(), ay = y.first * b.element_size();
    const int64_t nx = x.count * a.element_size(), ny = y.count * b.element_size();
    return ax < ay + ny && ay < ax + nx && !(ax == ay && nx == ny);
}

/// copy_ between `neuron` tensors of one device by device kernels and DMA,
/// in the stream's order: conversions between float32 and bfloat16,
/// broadcasts, and strided views read or written. False, doing nothing,
/// for one-byte dtypes and other conversions.
bool copy_on_device(const at::Tensor &src, const at::Tensor &dst) {
    if (src.scalar_type() == dst.scalar_type() && src.sizes() == dst.sizes() &&
        same_layout(src, dst) && !overlap(src, dst)) {
        // A tensor copied onto its own bytes (load_state_dict of what a
        // checkpoint loaded in place) is already there; the DMA engine
        // refuses a copy onto itself.
        if (!src.storage().is_alias_of(dst.storage()) ||
            src.storage_offset() != dst.storage_offset())
            current(dst).copy(tensor_range(dst), tensor_range(src));
        return true;
    }
    // Kernels read and write one device's memory.
    if (src.device() != dst.device() || !moved_on_device(src.scalar_type()) ||
        !moved_on_device(dst.scalar_type()))
        return false;
    if (cast_on_device(src, dst))
        return true;
    at::Tensor value = src;
    if (value.scalar_type() != dst.scalar_type()) {
        if (!computed_dtype(value) || !computed_dtype(dst))
            return false;
        // The source's own elements are converted, before a broadcast
        // repeats them.
        value = cast(dense(value) ? value : contiguous_on_device(value), dst.scalar_type());
    }
    value = value.expand(dst.sizes());
    if (!dense(value) || overlap(value, dst))
        value = contiguous_on_device(value);
    if (!dense(dst)) {
        write_strided(dst, value);
        return true;
    }
    const BufferRange from = tensor_range(value);
    current(dst).copy(tensor_range(dst), from, std::move(value));
    return true;
}

} // namespace

at::Tensor copy_between(const at::Tensor &src, const at::Tensor &dst, bool non_blocking) {
    // Device-bound copies never wait; host-bound ones wait, unless
    // non_blocking into pinned memory.
    TORCH_CHECK(src.defined() && dst.defined(), "neuron: copy_ of an undefined tensor");
    if (dst.numel() == 0)
        return dst;
    at::assert_no_internal_overlap(dst);
    const bool src_neuron = src.device().is_privateuseone();
    const bool dst_neuron = dst.device().is_privateuseone();
    if (src_neuron != dst_neuron && non_blocking) {
        c10::DeviceGuard g(src_neuron ? src.device() : dst.device());
        if (copy_pinned(src, dst))
            return dst;
    }
    if (src_neuron && !dst_neuron) {
        c10::DeviceGuard g(src.device());
        to_host(src, dst);
    } else if (!src_neuron && dst_neuron) {
        TORCH_CHECK(src.device().is_cpu(), "neuron: copying from ", src.device(),
                    " to a neuron tensor: only CPU tensors are copied to neuron devices");
        c10::DeviceGuard g(dst.device());
        to_device(src, dst);
    } else {
        c10::DeviceGuard g(dst.device());
        if (src.device() != dst.device())
            stream_state(current_stream(src.device().index())).synchronize();
        if (!copy_on_device(src, dst)) {
            // Another device's strided views, one-byte dtypes and
            // conversions other than float32 <-> bfloat16 go through the
            // host.
            HostImage img = read_to_host(src);
            to_device(img.view, dst);
        }
    }
    return dst;
}

at::Scalar local_scalar(const at::Tensor &t) {
    TORCH_CHECK(t.numel() == 1, "neuron: a Tensor with ", t.numel(),
                " elements cannot be converted to Scalar");
    c10::DeviceGuard g(t.device());
    HostImage img = read_to_host(t);
    return img.view.item();
}

at::Tensor &fill(at::Tensor &t, const at::Scalar &value) {
    if (t.numel() == 0)
        return t;
    c10::DeviceGuard g(t.device());
    // The value, a CPU scalar of t's dtype, copied as a broadcast.
    to_device(at::scalar_tensor(value, t.options().device(at::kCPU)), t);
    return t;
}

} // namespace neuron::torch_bridge
