// SPDX-License-Identifier: MIT
// The devices of the neuron driver as sysfs describes them (docs/telemetry.md).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <neuron/device.hpp>

#include "neuron_tools/sysfs.hpp"

namespace neuron::tools {

/// The kernel module: /sys/module/neuron.
struct Driver {
    bool loaded = false;
    std::optional<std::string> version; ///< /sys/module/neuron/version
};

Driver read_driver(const Roots &roots);

/// Counters of one NeuronCore (neuron/core<N>/...). Missing files read as 0.
struct CoreCounters {
    unsigned index = 0;
    uint64_t busy_ns = 0;
    uint64_t instructions = 0;
    uint64_t flops = 0;
    uint64_t dma_bytes = 0;
    uint64_t jobs = 0;
    uint64_t faults = 0;
    uint64_t timeouts = 0;
    uint64_t resets = 0;
};

/// Counters of one DMA engine (neuron/dma<N>/...). Missing files read as 0.
struct DmaCounters {
    unsigned index = 0;
    uint64_t bytes = 0;
    uint64_t descriptors = 0;
    uint64_t errors = 0;
};

/// Whether the calling user may open the device node read-write.
struct NodeAccess {
    int error = 0;     ///< 0, or the errno of access(2) (EACCES, ENOENT, ...)
    std::string owner; ///< user name (or number) owning the node
    std::string group; ///< group name (or number) of the node
    unsigned mode = 0; ///< permission bits of the node
    bool ok() const { return error == 0; }
};

struct Device {
    unsigned index = 0; ///< N of /dev/accel/accelN; the simulators' are numbered in pid order
    std::string name;   ///< accelN
    std::string node;   ///< /dev/accel/accelN
    std::string bdf;    ///< PCI address, e.g. 0000:00:03.0
    std::optional<int> numa_node;
    std::optional<unsigned> cores;
    std::optional<unsigned> dma_engines;
    std::optional<uint64_t> memory_total;
    std::optional<uint64_t> memory_used;
    std::optional<std::string> hw_version;
    std::optional<std::string> fw_version;
    std::string state = "unknown"; ///< ready, resetting, failed; unknown if unreadable
    std::optional<uint64_t> reset_count;
    std::vector<CoreCounters> core; ///< filled when counters are asked for
    std::vector<DmaCounters> dma;   ///< filled when counters are asked for
    NodeAccess access;
    /// Where its attributes are when not in Roots::sys (a simulated device's
    /// published tree); empty for the driver's devices.
    std::filesystem::path attributes;
    int sim_pid = 0; ///< the process simulating it; 0 for the driver's devices
};

struct ScanOptions {
    bool counters = false; ///< read core<N>/ and dma<N>/ counters too
    bool access = true;    ///< check that the node can be opened
};

/// The driver's attribute directory of @p dev (libneuron's one path to it).
std::filesystem::path attributes_dir(const Roots &roots, const Device &dev);

/// Every accel device bound to the neuron driver, ordered by index, or the
/// one @p roots .device selects; for "sim" the simulated devices of running
/// processes (neuron::published_simulators()), named "sim" with the BDF
/// "sim:<pid>" (or "sim:<pid>.<n>" for a process's next ones).
std::vector<Device> scan_devices(const Roots &roots, const ScanOptions &opts = {});

/// A simulated device's published tree and the BDF the tools give it.
struct SimTree {
    neuron::SimulatedDevice sim;
    std::string bdf; ///< "sim:<pid>", "sim:<pid>.<n>"
};

/// The published trees of the simulated devices of running processes.
std::vector<SimTree> sim_trees();

/// For a simulator selector while no process simulates a device: the
/// devices @p sel describes (devices=N: all N), simulated by the caller for
/// as long as it keeps them, so that a tool shows a device a newcomer can
/// then use. Nothing otherwise. Throws neuron::Error for options the
/// simulator refuses.
std::vector<neuron::Device> simulate_if_none(const neuron::DeviceSelector &sel);

/// Re-reads the changing values of a device (memory used, state, reset
/// count, counters) in place.
void refresh_device(const Roots &roots, Device &dev, bool counters);

} // namespace neuron::tools
