// SPDX-License-Identifier: MIT
// Devices: enumeration through sysfs, opening, and what GET_PARAM reports.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <neuron/error.hpp>
#include <neuron/export.h>

namespace neuron {

namespace detail {
struct DeviceState;
struct BufferAccess;
class Os;
} // namespace detail

class Buffer;
class Fence;
class Queue;
class LoadedProgram;
class Program;
struct BufferRange;
class Device;

namespace detail {
NEURON_EXPORT Device open_device(std::shared_ptr<Os> os, const std::string &node);
}

/// Where the library looks for devices. Tests point these at a fake tree.
struct SysPaths {
    std::string sysfs_root = "/sys"; ///< holds class/accel/accelN
    std::string dev_root = "/dev";   ///< holds accel/accelN

    /// The defaults, overridden by $NEURON_SYSFS_ROOT and $NEURON_DEV_ROOT.
    NEURON_EXPORT static SysPaths from_env();
};

/// One neuron device found in sysfs (not opened).
struct DeviceEntry {
    unsigned index = 0;      ///< N of /dev/accel/accelN
    std::string node;        ///< device node, e.g. /dev/accel/accel0
    std::string sysfs_path;  ///< e.g. /sys/class/accel/accel0
    std::string pci_address; ///< e.g. 0000:00:03.0
    uint16_t vendor_id = 0;  ///< PCI vendor ID (0 if sysfs does not say)
    uint16_t device_id = 0;  ///< PCI device ID (0 if sysfs does not say)
    int numa_node = -1;      ///< -1 when unknown
};

/// All devices bound to the neuron driver, ordered by index. Never throws for
/// a missing /sys/class/accel: that simply means no devices. When
/// $NEURON_DEVICE selects the simulator, the simulator is the one device
/// (index 0, node "sim...").
NEURON_EXPORT std::vector<DeviceEntry> enumerate(const SysPaths &paths = SysPaths::from_env());

/// The devices in sysfs only, whatever $NEURON_DEVICE says.
NEURON_EXPORT std::vector<DeviceEntry>
enumerate_sysfs(const SysPaths &paths = SysPaths::from_env());

/// N of a device node name "accelN"; nullopt for any other name.
NEURON_EXPORT std::optional<unsigned> parse_accel_name(std::string_view name);

/// The device $NEURON_DEVICE names (anything Device::open takes), if set.
NEURON_EXPORT std::optional<std::string> selected_device();

/// Whether @p spec names the simulator: "sim" or "sim:<options>".
NEURON_EXPORT bool is_sim_spec(std::string_view spec);

/// Which device to use: what every tool's -d/--device and $NEURON_DEVICE
/// take, parsed the same way everywhere (docs/libneuron.md, "Choosing a
/// device").
struct NEURON_EXPORT DeviceSelector {
    enum class Kind {
        first, ///< nothing selected: the first device in sysfs
        sim,   ///< "sim" or "sim:OPTIONS": the simulator
        index, ///< "0": /dev/accel/accel0
        node,  ///< "/dev/accel/accel0" (a path)
        pci,   ///< "0000:00:03.0" or "00:03.0"
    };
    Kind kind = Kind::first;
    std::string text;        ///< the selector as given ("" for first)
    std::string source;      ///< where it came from: "-d 7", "NEURON_DEVICE='sim'"; "" for first
    std::string sim_options; ///< Kind::sim: what follows "sim:"
    unsigned index = 0;      ///< Kind::index
    std::string node;        ///< Kind::node
    std::string pci_address; ///< Kind::pci, canonical

    bool is_sim() const { return kind == Kind::sim; }

    /// Parses @p text (never empty); @p source names where it came from in
    /// messages. Throws Error(invalid_argument) saying what is accepted, or,
    /// for the simulator, what is wrong with its options (sim:OPTIONS, else
    /// $NEURON_SIM_OPTIONS), checked by the simulator's own parser.
    static DeviceSelector parse(std::string_view text, std::string source);

    /// The command line's choice when given (@p option, e.g. "-d", names it),
    /// else $NEURON_DEVICE, else the first device.
    static DeviceSelector from(const std::optional<std::string> &command_line,
                               std::string_view option = "-d");
};

/// Opens the device @p sel selects. A failure says which selector failed
/// and where it came from ("-d 7: ...", "NEURON_DEVICE='x': ...") and,
/// when no device is there, that the simulator is one (-d sim).
NEURON_EXPORT Device open_selected(const DeviceSelector &sel,
                                   const SysPaths &paths = SysPaths::from_env());

/// Every simulated device a sim selector makes: one, or N for the
/// simulator's devices=N option (device K also opens as
/// "sim:<options>,device=K"), in device order. Errors as open_selected's.
NEURON_EXPORT std::vector<Device> open_simulated(const DeviceSelector &sel);

/// A simulated device of a running process. Every simulated device
/// publishes what neuron.ko would show of it under @p root: sys/ shaped like
/// sysfs (class/accel/accel0, bus/pci/devices/<bdf>/neuron/ with the
/// attributes and counters of docs/telemetry.md) and fdinfo/<client>, the
/// drm-usage-stats of each open file.
struct SimulatedDevice {
    int pid = 0;      ///< the process simulating it
    std::string root; ///< $NEURON_SIM_DIR/<pid>.<n>
};

/// The simulated devices of this user's running processes, ordered by pid
/// (the directory: $NEURON_SIM_DIR, else $XDG_RUNTIME_DIR/neuron-sim, else
/// /tmp/neuron-sim-<uid>).
NEURON_EXPORT std::vector<SimulatedDevice> published_simulators();

/// Capability bits of DeviceInfo::capabilities.
enum Capability : uint64_t {
    cap_fp32 = 1u << 0,
    cap_bf16 = 1u << 1,
    cap_fp16 = 1u << 2,
    cap_host_bindings = 1u << 3, ///< jobs may bind host-memory buffers
    cap_core_reset = 1u << 4,    ///< a hung core is reset alone
    cap_profile = 1u << 5,       ///< jobs can be profiled (neuron::Profile)
};

/// Everything GET_PARAM reports, read once when the device is opened.
struct DeviceInfo {
    uint16_t vendor_id = 0;
    uint16_t device_id = 0;
    uint32_t revision = 0;
    uint32_t num_cores = 0;
    uint32_t num_dma_engines = 0;
    uint64_t device_memory_size = 0; ///< bytes; 0 when the device has none
    uint64_t sbuf_size = 0;          ///< SBUF bytes per core
    uint64_t psum_size = 0;          ///< PSUM bytes per core
    uint32_t partitions = 0;
    uint32_t hw_version = 0;   ///< major << 16 | minor
    uint32_t fw_version = 0;   ///< major << 16 | minor
    uint32_t api_version = 0;  ///< UAPI major << 16 | minor
    uint64_t capabilities = 0; ///< Capability bits
    uint32_t core_clock_mhz = 0;
    uint32_t max_bindings = 0;
    std::string pci_address; ///< DDDD:BB:DD.F
    /// Instruction set of the cores, major << 16 | minor: programs whose
    /// Program::isa_version() is above it cannot run (a driver before UAPI
    /// 1.2 does not report it; its devices implement ISA 1.0).
    uint32_t isa_version = 0;

    bool has(Capability c) const { return (capabilities & c) != 0; }
};

/// Buffer placement.
enum class Region : uint32_t {
    device = 0, ///< device memory (HBM): fast for the device; CPU mapping write-combined
    host = 1,   ///< pinned system memory
};

/// Buffer creation flags.
enum BufferFlags : uint32_t {
    buffer_write_combined = 1u << 0, ///< map a host buffer write-combined
};

/// Lets the driver pick the DMA engine of a copy.
inline constexpr unsigned any_engine = ~0u;

/// An open device: a handle shared by everything created from it (buffers,
/// fences, queues keep it open). Copies refer to the same open file.
class NEURON_EXPORT Device {
  public:
    /// Opens device /dev/accel/accel<index>.
    static Device open(unsigned index, const SysPaths &paths = SysPaths::from_env());
    /// Opens by a device node path ("/dev/accel/accel0"), an index ("0"), a
    /// PCI address ("0000:00:03.0" or "00:03.0") or the simulator ("sim",
    /// "sim:cores=2,mem=256M"; see docs/libneuron.md).
    static Device open(std::string_view spec, const SysPaths &paths = SysPaths::from_env());
    /// Opens the device $NEURON_DEVICE names, else the first device.
    static Device open_first(const SysPaths &paths = SysPaths::from_env());

    const DeviceInfo &info() const;
    const std::string &path() const; ///< the device node
    int fd() const;                  ///< the DRM file, for interop; owned by the Device

    /// Device memory allocated to buffers now, by every process, in bytes:
    /// the driver's sysfs memory_used (docs/telemetry.md), the simulator's
    /// own accounting for "sim". nullopt when it cannot be read.
    std::optional<uint64_t> memory_used() const;

    /// A new buffer object of at least @p size bytes (rounded up to the page size).
    Buffer allocate(uint64_t size, Region region = Region::device, uint32_t flags = 0) const;

    /// Queues a DMA copy of min(dst.size, src.size) bytes (they must agree)
    /// after every fence in @p deps; returns the copy's fence.
    Fence copy(const BufferRange &dst, const BufferRange &src, const std::vector<Fence> &deps,
               unsigned engine = any_engine) const;
    Fence copy(const BufferRange &dst, const BufferRange &src) const;

    /// The job queue of core @p core.
    Queue queue(unsigned core) const;

    /// Uploads a program's device image and constants once; see LoadedProgram.
    LoadedProgram load(const Program &program) const;

    const std::shared_ptr<detail::DeviceState> &state() const { return state_; }

  private:
    explicit Device(std::shared_ptr<detail::DeviceState> s) : state_(std::move(s)) {}
    friend Device detail::open_device(std::shared_ptr<detail::Os> os, const std::string &node);
    friend struct detail::BufferAccess;
    static Device open_node(const std::string &node);
    std::shared_ptr<detail::DeviceState> state_;
};

/// The directory of neuron.ko's attributes and counters of the PCI device at
/// @p pci_address (docs/telemetry.md): <sysfs_root>/bus/pci/devices/<bdf>/neuron.
NEURON_EXPORT std::string device_attributes_dir(const SysPaths &paths,
                                                const std::string &pci_address);

/// Parses "DDDD:BB:DD.F" or "BB:DD.F" into the canonical lower-case
/// "dddd:bb:dd.f" form; nullopt if it is not a PCI address.
NEURON_EXPORT std::optional<std::string> normalize_pci_address(std::string_view s);

} // namespace neuron
