// SPDX-License-Identifier: MIT
// The ATen kernels every `neuron` tensor needs, registered for the
// PrivateUse1 key: creation, views, resizing, copies, scalars, fills and
// arange.
// Other operators reach the device's eager path or the CPU fallback
// (torch_neuronx/eager).
#include <ATen/ATen.h>
#include <ATen/EmptyTensor.h>
#include <ATen/native/Resize.h>
#include <ATen/ops/_reshape_alias_native.h>
#include <ATen/ops/as_strided_native.h>
#include <ATen/ops/view_native.h>
#include <c10/core/DeviceGuard.h>
#include <torch/library.h>

#include "allocator.hpp"
#include "copy.hpp"
#include "cores.hpp"
#include "dtypes.hpp"

namespace neuron::torch_bridge {

namespace {

constexpr c10::DispatchKeySet neuron_keys(c10::DispatchKey::PrivateUse1);

c10::Device target(std::optional<c10::Device> device) {
    c10::Device d = c10::device_or_default(device);
    if (!d.has_index())
        d.set_index(current_core_index());
    return d;
}

void check_options(std::optional<c10::ScalarType> dtype, std::optional<c10::Layout> layout,
                   std::optional<bool> pin_memory) {
    TORCH_CHECK(c10::layout_or_default(layout) == c10::Layout::Strided,
                "neuron: only strided tensors are supported, not ", c10::layout_or_default(layout));
    TORCH_CHECK(!c10::pinned_memory_or_default(pin_memory),
                "neuron: pin_memory applies to CPU tensors only");
    const c10::ScalarType type = c10::dtype_or_default(dtype);
    TORCH_CHECK(device_holds(type), "neuron: ", type, " tensors are not supported on the device; ",
                "keep ", c10::isComplexType(type) ? "complex" : "quantized", " tensors on the CPU");
}

at::Tensor empty(c10::IntArrayRef size, std::optional<c10::ScalarType> dtype,
                 std::optional<c10::Layout> layout, std::optional<c10::Device> device,
                 std::optional<bool> pin_memory, std::optional<c10::MemoryFormat> format) {
    check_options(dtype, layout, pin_memory);
    const c10::DeviceGuard guard(target(device));
    return at::detail::empty_generic(size, &device_allocator(), neuron_keys,
                                     c10::dtype_or_default(dtype), format);
}

at::Tensor empty_strided(c10::IntArrayRef size, c10::IntArrayRef stride,
                         std::optional<c10::ScalarType> dtype, std::optional<c10::Layout> layout,
                         std::optional<c10::Device> device, std::optional<bool> pin_memory) {
    check_options(dtype, layout, pin_memory);
    const c10::DeviceGuard guard(target(device));
    return at::detail::empty_strided_generic(size, stride, &device_allocator(), neuron_keys,
                                             c10::dtype_or_default(dtype));
}

at::Tensor as_strided(const at::Tensor &self, c10::IntArrayRef size, c10::IntArrayRef stride,
                      std::optional<int64_t> storage_offset) {
    return at::native::as_strided_tensorimpl(self, size, stride, storage_offset);
}

at::Tensor view(const at::Tensor &self, c10::IntArrayRef size) {
    return at::native::view(self, size);
}

at::Tensor reshape_alias(const at::Tensor &self, c10::IntArrayRef size, c10::IntArrayRef stride) {
    return at::native::_reshape_alias(self, size, stride);
}

// The bytes a tensor of @p size and @p stride needs from its storage's
// start, at @p offset elements.
uint64_t bytes_needed(c10::IntArrayRef size, c10::IntArrayRef stride, int64_t offset,
                      size_t itemsize) {
    int64_t last = offset;
    for (size_t d = 0; d < size.size(); d++) {
        if (size[d] == 0)
            return 0;
        last += (size[d] - 1) * stride[d];
    }
    return static_cast<uint64_t>(last + 1) * itemsize;
}

const at::Tensor &resize_tensor(const at::Tensor &self, c10::IntArrayRef size,
                                std::optional<c10::MemoryFormat> format) {
    const c10::DeviceGuard guard(self.device());
    c10::TensorImpl *impl = self.unsafeGetTensorImpl();
    impl->set_sizes_contiguous(size);
    if (format && *format != c10::MemoryFormat::Preserve)
        impl->empty_tensor_restride(*format);
    grow_storage(
        *self.storage().unsafeGetStorageImpl(),
        bytes_needed(self.sizes(), self.strides(), self.storage_offset(), self.element_size()));
    return self;
}

at::Tensor &set_storage(at::Tensor &self, c10::Storage source, int64_t offset,
                        c10::IntArrayRef size, c10::IntArrayRef stride) {
    TORCH_CHECK(source.device().is_privateuseone(), "neuron: set_ with a storage on ",
                source.device());
    const c10::DeviceGuard guard(source.device());
    c10::TensorImpl *impl = self.unsafeGetTensorImpl();
    if (!self.storage().is_alias_of(source))
        impl->set_storage_keep_dtype(std::move(source));
    impl->set_storage_offset(offset);
    if (stride.empty())
        impl->set_sizes_contiguous(size);
    else
        impl->set_sizes_and_strides(size, stride);
    grow_storage(*self.storage().unsafeGetStorageImpl(),
                 bytes_needed(self.sizes(), self.strides(), offset, self.element_size()));
    return self;
}

at::Tensor &set_source_storage(at::Tensor &self, c10::Storage source) {
    const auto n = static_cast<int64_t>(source.nbytes() / self.element_size());
    return set_storage(self, std::move(source), 0, {n}, {});
}

at::Tensor &set_source_tensor(at::Tensor &self, const at::Tensor &source) {
    if (self.is_same(source))
        return self;
    return set_storage(self, source.storage(), source.storage_offset(), source.sizes(),
                       source.strides());
}

at::Tensor copy_from(const at::Tensor &self, const at::Tensor &dst, bool non_blocking) {
    return copy_between(self, dst, non_blocking);
}

at::Tensor copy_from_and_resize(const at::Tensor &self, const at::Tensor &dst) {
    if (dst.sizes() != self.sizes())
        resize_tensor(dst, self.sizes(), std::nullopt);
    return copy_between(self, dst, false);
}

at::Scalar local_scalar_dense(const at::Tensor &self) {
    return local_scalar(self);
}

at::Tensor &fill_scalar(at::Tensor &self, const at::Scalar &value) {
    return fill(self, value);
}

at::Tensor &fill_tensor(at::Tensor &self, const at::Tensor &value) {
    TORCH_CHECK(value.dim() == 0, "neuron: fill_ takes a 0-dimensional value tensor, got ",
                value.dim(), " dimensions");
    return fill(self, value.item());
}

at::Tensor &zero(at::Tensor &self) {
    return fill(self, 0);
}

void record_stream(at::Tensor &self, c10::Stream stream) {
    device_allocator().recordStream(self.storage().data_ptr(), stream);
}

/// Whether @p from's TensorImpl may be shallow-copied into @p self's, as
/// between CPU and CUDA tensors: dense tensors of the CPU and of the device
/// (plain TensorImpls both). c10 lists no PrivateUse1 backend as dense, so
/// without this Module.to("neuron") makes a new Parameter per module and
/// unties tied weights (a language model's embedding and output layer).
bool has_compatible_shallow_copy_type(const at::Tensor &self, const at::Tensor &from) {
    constexpr auto backends =
        c10::DispatchKeySet({c10::BackendComponent::CPUBit, c10::BackendComponent::PrivateUse1Bit});
    constexpr auto dense = c10::DispatchKeySet(c10::DispatchKey::Dense);
    auto is_dense = [&](const at::Tensor &t) {
        const c10::DispatchKeySet ks = t.key_set();
        return ks.has_any(dense) && ks.has_any(backends) && t.layout() == at::kStrided;
    };
    return self.key_set() == from.key_set() || (is_dense(self) && is_dense(from));
}

/// arange's values are a function of its numbers alone: the host computes
/// them as the CPU does and copies them to the device in the stream's
/// order (as a fill is written), never waiting for the device.
at::Tensor &arange_out(const at::Scalar &start, const at::Scalar &end, const at::Scalar &step,
                       at::Tensor &out) {
    const at::Tensor values = at::arange(start, end, step, out.options().device(at::kCPU));
    if (out.sizes() != values.sizes())
        out.resize_(values.sizes());
    out.copy_(values);
    return out;
}

} // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
    m.impl("empty.memory_format", empty);
    m.impl("empty_strided", empty_strided);
    m.impl("as_strided", as_strided);
    m.impl("view", view);
    m.impl("_reshape_alias", reshape_alias);
    m.impl("resize_", resize_tensor);
    m.impl("set_.source_Storage_storage_offset", set_storage);
    m.impl("set_.source_Storage", set_source_storage);
    m.impl("set_.source_Tensor", set_source_tensor);
    m.impl("_copy_from", copy_from);
    m.impl("_copy_from_and_resize", copy_from_and_resize);
    m.impl("_local_scalar_dense", local_scalar_dense);
    m.impl("fill_.Scalar", fill_scalar);
    m.impl("fill_.Tensor", fill_tensor);
    m.impl("zero_", zero);
    m.impl("arange.start_out", arange_out);
    m.impl("record_stream", record_stream);
    m.impl("_has_compatible_shallow_copy_type", has_compatible_shallow_copy_type);
}

} // namespace neuron::torch_bridge
