// SPDX-License-Identifier: MIT
// The dtypes a `neuron` tensor can have (what tensor creation checks) and
// those it also converts between (torch.accelerator.get_device_capability()).
#pragma once

#include <c10/core/ScalarType.h>

namespace neuron::torch_bridge {

// Device memory holds any dtype's bytes and copies convert between them;
// nothing on the device computes in complex numbers (their lazy conjugate
// would be materialised by copies that copy it again), and quantized
// tensors have no backend here.
inline bool device_holds(c10::ScalarType dtype) {
    return !c10::isComplexType(dtype) && !c10::isQIntType(dtype);
}

// The dtypes a tensor converts to and from with .to(), as on the CPU: the
// integers, bool and the floating types, not the bit containers, the
// sub-byte shells or the packed fp4 pairs (storage only, on the CPU too).
inline bool device_converts(c10::ScalarType dtype) {
    return device_holds(dtype) &&
           (c10::isIntegralType(dtype, /*includeBool=*/true) ||
            (c10::isFloatingType(dtype) && dtype != c10::ScalarType::Float4_e2m1fn_x2));
}

} // namespace neuron::torch_bridge
