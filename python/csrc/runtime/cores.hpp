// SPDX-License-Identifier: MIT
// The cores behind the `neuron` device's indices: index i is the i-th core
// of $NEURON_RT_VISIBLE_CORES (else of every core) of the device libneuron
// opens first ($NEURON_DEVICE selects, "sim" the simulator), as TorchNeuron
// numbers them. The device is opened on first use, never at import.
#pragma once

#include <string>
#include <vector>

#include <c10/core/Device.h>

#include <neuron/neuron.hpp>

namespace neuron::torch_bridge {

/// One index of the `neuron` device: a core of an open device and its queue.
struct Core {
    Device device;
    unsigned core;
    Queue queue;
};

/// The number of `neuron` device indices; 0 when there is no device (never
/// throws: torch asks before any tensor exists).
c10::DeviceIndex core_count() noexcept;

/// Index @p index (opens the device on first use); a clear error when
/// there is no device or the index is out of range.
const Core &core_at(c10::DeviceIndex index);

/// Why there is no device ("" when there is one).
std::string why_no_device();

/// The calling thread's current index (torch.neuron.set_device).
c10::DeviceIndex current_core_index() noexcept;
void set_current_core_index(c10::DeviceIndex index);

/// The device $NEURON_DEVICE names, else the first; "no device" errors say
/// what to do about it (load neuron.ko, or run on the simulator).
Device open_device(const std::string &what);

/// The cores of $NEURON_RT_VISIBLE_CORES ("2", "2-3", "1,3") of a device
/// with @p num_cores cores, in order; every core when it is unset.
std::vector<unsigned> visible_cores_of(unsigned num_cores);

} // namespace neuron::torch_bridge
