// SPDX-License-Identifier: MIT
//
// torch.autocast("neuron"): PyTorch's own cast policy (the operator lists
// of ATen/autocast_mode.h, as CUDA registers them) for the device's
// autocast key. Operators outside the lists fall through to the device.
#include <ATen/autocast_mode.h>
#include <torch/library.h>

namespace {

using at::Tensor;
using c10::IntArrayRef;
using c10::Scalar;
using c10::ScalarType;
using c10::string_view;

TORCH_LIBRARY_IMPL(_, AutocastPrivateUse1, m) {
    m.fallback(torch::CppFunction::makeFallthrough());
}

TORCH_LIBRARY_IMPL(aten, AutocastPrivateUse1, m) {
#define NEURON_LOWER_PRECISION_FP(...) KERNEL_PRIVATEUSEONE(__VA_ARGS__, lower_precision_fp)
    AT_FORALL_LOWER_PRECISION_FP(NEURON_LOWER_PRECISION_FP)
#undef NEURON_LOWER_PRECISION_FP

#define NEURON_FP32(...) KERNEL_PRIVATEUSEONE(__VA_ARGS__, fp32)
    AT_FORALL_FP32(NEURON_FP32)
#undef NEURON_FP32

#define NEURON_FP32_SET_OPT_DTYPE(...) KERNEL_PRIVATEUSEONE(__VA_ARGS__, fp32_set_opt_dtype)
    AT_FORALL_FP32_SET_OPT_DTYPE(NEURON_FP32_SET_OPT_DTYPE)
#undef NEURON_FP32_SET_OPT_DTYPE

    AT_FORALL_DIFFERENT_REDISPATCH_SIGNATURE(KERNEL_DIFFERENT_REDISPATCH_SIGNATURE_PRIVATEUSEONE)

#define NEURON_PROMOTE(...) KERNEL_PRIVATEUSEONE(__VA_ARGS__, promote)
    AT_FORALL_PROMOTE(NEURON_PROMOTE)
#undef NEURON_PROMOTE
}

} // namespace
