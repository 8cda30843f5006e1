// SPDX-License-Identifier: MIT
// Opening devices: by index, node, PCI address or as the simulator; the
// DRM driver check and GET_PARAM.
#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <map>

#include <dlfcn.h>
#include <sys/stat.h>

#include "device_state.hpp"

namespace neuron {
namespace detail {

DeviceState::~DeviceState() {
    // Idle trace buffers hold no Device: unmap and close them here.
    for (auto &p : idle_profiles) {
        BufferState &b = BufferAccess::state(p.buffer());
        if (auto *m = b.map.exchange(nullptr))
            os->munmap(m, b.size);
        if (b.handle) {
            drm_gem_close c{};
            c.handle = b.handle;
            (void)ioctl(DRM_IOCTL_GEM_CLOSE, &c);
            b.handle = 0;
        }
    }
    idle_profiles.clear();
    if (fd >= 0)
        os->close(fd);
}

} // namespace detail

using detail::throw_errno;

std::optional<std::string> selected_device() {
    if (const char *s = std::getenv("NEURON_DEVICE"); s && *s)
        return std::string(s);
    return std::nullopt;
}

bool is_sim_spec(std::string_view spec) {
    return spec == "sim" || spec.substr(0, 4) == "sim:";
}

namespace {

// Why there is no device, and what to do: load the driver, or use the simulator.
std::string no_device_hint(const SysPaths &paths) {
    constexpr const char *sim = "; or use the simulator: NEURON_DEVICE=sim (-d sim for the tools)";
    auto os = detail::real_os();
    if (!os->exists(paths.sysfs_root + "/module/neuron"))
        return fmt::format("neuron.ko is not loaded (run 'modprobe neuron'){}", sim);
    return fmt::format("neuron.ko is loaded but no device is bound to it (see 'dmesg | grep "
                       "neuron' and 'lspci -d 1d0f:'){}",
                       sim);
}

std::string permission_hint(detail::Os &os, const std::string &node) {
    auto m = os.node_mode(node);
    if (!m)
        return "check the permissions of the device node";
    if ((m->mode & S_IRGRP) && (m->mode & S_IWGRP) && m->gid != 0)
        return fmt::format("add the user to group {} (the node is mode {:04o}, group {})", m->group,
                           m->mode & 07777, m->group);
    return fmt::format("the node is mode {:04o}, group {}: install the neuron udev rules "
                       "(udev/) so that group render may use it, or run as root",
                       m->mode & 07777, m->group);
}

// --- the simulator ----------------------------------------------------------------

// libneuron-sim.so.0's entry points.
struct SimEntries {
    detail::SimCreateFn create = nullptr;
    detail::SimCheckFn check = nullptr;
};

// libneuron-sim.so.0 next to this library, else wherever the loader finds it.
const SimEntries &load_sim() {
    static std::mutex lock;
    static SimEntries entries;
    std::lock_guard<std::mutex> g(lock);
    if (entries.create)
        return entries;
    constexpr const char *soname = "libneuron-sim.so.0";
    void *h = nullptr;
    Dl_info self{};
    if (dladdr(reinterpret_cast<void *>(&load_sim), &self) && self.dli_fname) {
        std::string dir = self.dli_fname;
        auto slash = dir.find_last_of('/');
        if (slash != std::string::npos)
            h = dlopen((dir.substr(0, slash + 1) + soname).c_str(), RTLD_NOW | RTLD_LOCAL);
    }
    if (!h)
        h = dlopen(soname, RTLD_NOW | RTLD_LOCAL);
    if (!h)
        throw Error(errc::not_supported,
                    fmt::format("sim: cannot load the simulator ({}): {}", soname, dlerror()));
    auto entry = [&](const char *symbol) {
        void *sym = dlsym(h, symbol);
        if (!sym)
            throw Error(errc::not_supported,
                        fmt::format("sim: {} has no {}: {}", soname, symbol, dlerror()));
        return sym;
    };
    SimEntries e;
    e.create = reinterpret_cast<detail::SimCreateFn>(entry(detail::sim_entry_symbol));
    e.check = reinterpret_cast<detail::SimCheckFn>(entry(detail::sim_check_symbol));
    entries = e;
    return entries;
}

// One simulated device per option string and device number, shared by
// every open of it in the process (like one device shared by the files that
// open it): "devices=2" and "devices=2,device=0" are the same device.
std::shared_ptr<detail::Os> sim_os(const std::string &options) {
    static std::mutex lock;
    static std::map<std::string, std::weak_ptr<detail::Os>> devices;
    auto [rest, number] = detail::split_sim_device(options);
    const std::string key = fmt::format("{}|device={}", rest, number.empty() ? "0" : number);
    auto create = load_sim().create;
    std::lock_guard<std::mutex> g(lock);
    if (auto os = devices[key].lock())
        return os;
    char err[256] = "";
    detail::Os *raw = create(detail::sim_abi_version, options.c_str(), err, sizeof(err));
    if (!raw)
        throw Error(errc::invalid_argument, fmt::format("sim:{}: {}", options, err));
    std::shared_ptr<detail::Os> os(raw);
    devices[key] = os;
    return os;
}

} // namespace

std::pair<std::string, std::string> detail::split_sim_device(std::string_view options) {
    std::string rest, number;
    while (!options.empty()) {
        auto comma = options.find(',');
        std::string_view item = options.substr(0, comma);
        options = comma == std::string_view::npos ? std::string_view() : options.substr(comma + 1);
        if (item.substr(0, 7) == "device=")
            number = std::string(item.substr(7));
        else if (!item.empty())
            rest += fmt::format("{}{}", rest.empty() ? "" : ",", item);
    }
    return {rest, number};
}

std::optional<std::string> detail::sim_options_error(const std::string &options) {
    if (options.empty())
        return std::nullopt; // the defaults: nothing to load the simulator for
    char err[256] = "";
    if (load_sim().check(detail::sim_abi_version, options.c_str(), err, sizeof(err)) == 0)
        return std::nullopt;
    return std::string(err);
}

std::string detail::sim_options(std::string_view spec) {
    if (spec.size() > 4)
        return std::string(spec.substr(4));
    if (const char *o = std::getenv("NEURON_SIM_OPTIONS"))
        return o;
    return {};
}

namespace {

Device open_sim(std::string_view spec) {
    return detail::open_device(sim_os(detail::sim_options(spec)), std::string(spec));
}

} // namespace

Device Device::open(unsigned index, const SysPaths &paths) {
    auto devs = enumerate(paths);
    for (const auto &d : devs)
        if (d.index == index)
            return open_node(d.node);
    if (devs.empty())
        throw Error(errc::no_device, fmt::format("neuron device {}: no neuron devices: {}", index,
                                                 no_device_hint(paths)));
    std::string have;
    for (const auto &d : devs)
        have += fmt::format("{}{} ({})", have.empty() ? "" : ", ", d.index, d.pci_address);
    throw Error(
        errc::no_device,
        fmt::format("neuron device {}: no such device: the neuron devices are {}", index, have));
}

DeviceSelector DeviceSelector::parse(std::string_view text, std::string source) {
    DeviceSelector s;
    s.text = std::string(text);
    s.source = std::move(source);
    if (is_sim_spec(text)) {
        s.kind = Kind::sim;
        s.sim_options = text.size() > 4 ? std::string(text.substr(4)) : "";
        // Checked here, by the simulator's own parser, whether or not a
        // simulated device is then made: the tools that list the devices
        // other processes simulate reject bad options as opening one does.
        const std::string options = detail::sim_options(text);
        if (auto bad = detail::sim_options_error(options))
            throw Error(errc::invalid_argument,
                        fmt::format("{}: {}{}", s.source.empty() ? s.text : s.source,
                                    s.sim_options.empty()
                                        ? fmt::format("NEURON_SIM_OPTIONS='{}': ", options)
                                        : "",
                                    *bad));
        return s;
    }
    if (!text.empty() && (text.front() == '/' || text.front() == '.')) {
        s.kind = Kind::node;
        s.node = std::string(text);
        return s;
    }
    if (!text.empty() && text.size() < 8 &&
        std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; })) {
        s.kind = Kind::index;
        s.index = static_cast<unsigned>(std::stoul(std::string(text)));
        return s;
    }
    if (auto bdf = normalize_pci_address(text)) {
        s.kind = Kind::pci;
        s.pci_address = *bdf;
        return s;
    }
    throw Error(errc::invalid_argument,
                fmt::format("{}: not a device: expected an index (0), a device node "
                            "(/dev/accel/accel0), a PCI address (0000:00:03.0) or the "
                            "simulator (sim, sim:cores=4,mem=1G)",
                            s.source.empty() ? fmt::format("'{}'", text) : s.source));
}

DeviceSelector DeviceSelector::from(const std::optional<std::string> &command_line,
                                    std::string_view option) {
    if (command_line && !command_line->empty())
        return parse(*command_line, fmt::format("{} {}", option, *command_line));
    if (auto env = selected_device())
        return parse(*env, fmt::format("NEURON_DEVICE='{}'", *env));
    return {};
}

namespace {

// By PCI address among enumerate()'s devices: with NEURON_DEVICE=sim the
// simulator's address (0000:00:00.0) names it.
Device open_pci(const std::string &bdf, const SysPaths &paths) {
    auto devs = enumerate(paths);
    for (const auto &d : devs)
        if (d.pci_address == bdf)
            return is_sim_spec(d.node) ? open_sim(d.node)
                                       : detail::open_device(detail::real_os(), d.node);
    std::string have;
    for (const auto &d : devs)
        have += fmt::format("{}{}", have.empty() ? "" : ", ", d.pci_address);
    throw Error(
        errc::no_device,
        fmt::format("PCI device {}: no neuron device at this address: {}", bdf,
                    devs.empty() ? no_device_hint(paths) : "the neuron devices are at " + have));
}

Device open_unnamed(const DeviceSelector &sel, const SysPaths &paths) {
    switch (sel.kind) {
    case DeviceSelector::Kind::sim:
        return open_sim(sel.text);
    case DeviceSelector::Kind::node:
        return detail::open_device(detail::real_os(), sel.node);
    case DeviceSelector::Kind::index:
        return Device::open(sel.index, paths);
    case DeviceSelector::Kind::pci:
        return open_pci(sel.pci_address, paths);
    case DeviceSelector::Kind::first:
        break;
    }
    auto devs = enumerate_sysfs(paths);
    if (devs.empty())
        throw Error(errc::no_device, fmt::format("no neuron devices: {}", no_device_hint(paths)));
    return detail::open_device(detail::real_os(), devs.front().node);
}

} // namespace

Device open_selected(const DeviceSelector &sel, const SysPaths &paths) {
    if (sel.source.empty())
        return open_unnamed(sel, paths);
    try {
        return open_unnamed(sel, paths);
    } catch (const Error &e) {
        throw Error(e.code(), fmt::format("{}: {}", sel.source, e.what()));
    }
}

std::vector<Device> open_simulated(const DeviceSelector &sel) {
    if (!sel.is_sim())
        throw Error(
            errc::invalid_argument,
            fmt::format("{}: not the simulator", sel.source.empty() ? sel.text : sel.source));
    try {
        // The simulator's devices=N option makes N devices, device K named
        // by "sim:<options>,device=K" (the selected one by its own name).
        Device selected = open_sim(sel.text);
        const std::string n = selected.state()->os->read_line("sim_devices");
        const unsigned count = n.empty() ? 1u : static_cast<unsigned>(std::stoul(n));
        auto [rest, number] = detail::split_sim_device(detail::sim_options(sel.text));
        std::vector<Device> out;
        for (unsigned k = 0; k < count; k++) {
            if (std::to_string(k) == (number.empty() ? "0" : number))
                out.push_back(selected);
            else
                out.push_back(
                    open_sim(fmt::format("sim:{}{}device={}", rest, rest.empty() ? "" : ",", k)));
        }
        return out;
    } catch (const Error &e) {
        if (sel.source.empty())
            throw;
        throw Error(e.code(), fmt::format("{}: {}", sel.source, e.what()));
    }
}

Device Device::open_first(const SysPaths &paths) {
    return open_selected(DeviceSelector::from(std::nullopt), paths);
}

Device Device::open(std::string_view spec, const SysPaths &paths) {
    if (spec.empty())
        return open_first(paths);
    return open_unnamed(DeviceSelector::parse(spec, ""), paths);
}

Device Device::open_node(const std::string &node) {
    if (is_sim_spec(node))
        return open_sim(node);
    return detail::open_device(detail::real_os(), node);
}

namespace {

uint64_t get_param(const detail::DeviceState &s, uint32_t param) {
    drm_neuron_get_param p{};
    p.param = param;
    if (int e = s.ioctl(DRM_IOCTL_NEURON_GET_PARAM, &p))
        throw_errno(e, fmt::format("{}: GET_PARAM {}", s.path, param));
    return p.value;
}

// DRM_IOCTL_VERSION's driver name (what drmGetVersion reports).
std::string drm_driver_name(const detail::DeviceState &s) {
    char name[64] = "";
    drm_version v{};
    v.name = name;
    v.name_len = sizeof(name) - 1;
    if (int e = s.ioctl(DRM_IOCTL_VERSION, &v))
        throw Error(errc::not_supported,
                    fmt::format("{}: not a DRM device (DRM_IOCTL_VERSION failed: {})", s.path,
                                detail::errno_text(e)));
    return std::string(name, std::min(v.name_len, sizeof(name) - 1));
}

void read_info(const detail::DeviceState &s, DeviceInfo &i) {
    uint64_t api = get_param(s, DRM_NEURON_PARAM_API_VERSION);
    i.api_version = static_cast<uint32_t>(api);
    if ((api >> 16) != DRM_NEURON_API_VERSION_MAJOR)
        throw Error(errc::not_supported,
                    fmt::format("{}: the driver speaks UAPI {}.{}, this library {}.{}", s.path,
                                api >> 16, api & 0xffff, DRM_NEURON_API_VERSION_MAJOR,
                                DRM_NEURON_API_VERSION_MINOR));
    uint64_t id = get_param(s, DRM_NEURON_PARAM_DEVICE_ID);
    i.vendor_id = static_cast<uint16_t>(id >> 16);
    i.device_id = static_cast<uint16_t>(id);
    i.revision = static_cast<uint32_t>(get_param(s, DRM_NEURON_PARAM_DEVICE_REVISION));
    i.num_cores = static_cast<uint32_t>(get_param(s, DRM_NEURON_PARAM_NUM_CORES));
    i.num_dma_engines = static_cast<uint32_t>(get_param(s, DRM_NEURON_PARAM_NUM_DMA_ENGINES));
    i.device_memory_size = get_param(s, DRM_NEURON_PARAM_DEVICE_MEM_SIZE);
    i.sbuf_size = get_param(s, DRM_NEURON_PARAM_SBUF_SIZE);
    i.psum_size = get_param(s, DRM_NEURON_PARAM_PSUM_SIZE);
    i.partitions = static_cast<uint32_t>(get_param(s, DRM_NEURON_PARAM_PARTITIONS));
    i.hw_version = static_cast<uint32_t>(get_param(s, DRM_NEURON_PARAM_HW_VERSION));
    i.fw_version = static_cast<uint32_t>(get_param(s, DRM_NEURON_PARAM_FW_VERSION));
    // DRM_NEURON_PARAM_ISA_VERSION: since UAPI 1.2. An older driver cannot
    // report it, but the device's interface version bounds it (hw/README.md,
    // ISA_VERSION): ISA 1.0 for an interface 1.0 device, 1.1 or later after.
    if ((api & 0xffff) >= 2)
        i.isa_version = static_cast<uint32_t>(get_param(s, DRM_NEURON_PARAM_ISA_VERSION));
    else
        i.isa_version = i.hw_version >= (1u << 16 | 1u) ? 1u << 16 | 1u : 1u << 16;
    i.capabilities = get_param(s, DRM_NEURON_PARAM_CAPABILITIES);
    i.core_clock_mhz = static_cast<uint32_t>(get_param(s, DRM_NEURON_PARAM_CORE_CLOCK_MHZ));
    i.max_bindings = static_cast<uint32_t>(get_param(s, DRM_NEURON_PARAM_MAX_BINDINGS));
    uint64_t bus = get_param(s, DRM_NEURON_PARAM_PCI_BUS_INFO);
    // DRM_NEURON_PCI_DOMAIN() and friends, without their C casts.
    i.pci_address = fmt::format("{:04x}:{:02x}:{:02x}.{:x}", static_cast<uint32_t>(bus >> 32),
                                static_cast<uint8_t>(bus >> 8), (bus >> 3) & 0x1f, bus & 0x7);
}

} // namespace

Device detail::open_device(std::shared_ptr<Os> os, const std::string &node) {
    int fd = os->open(node);
    if (fd < 0) {
        int e = -fd;
        if (e == EACCES || e == EPERM)
            throw Error(errc::permission_denied,
                        fmt::format("{}: permission denied: {}", node, permission_hint(*os, node)));
        if (e == ENOENT || e == ENXIO || e == ENODEV)
            throw Error(errc::no_device,
                        fmt::format("{}: {}: the device node does not exist (is neuron.ko "
                                    "loaded and the device bound?)",
                                    node, detail::errno_text(e)));
        throw_errno(e, node + ": open");
    }
    auto s = std::make_shared<DeviceState>();
    s->os = std::move(os);
    s->fd = fd;
    s->path = node;
    std::string drv = drm_driver_name(*s);
    if (drv != "neuron")
        throw Error(errc::not_supported,
                    fmt::format("{}: not a neuron device (its driver is '{}')", node, drv));
    read_info(*s, s->info);
    read_profile_env(*s);
    if (!is_sim_spec(node))
        s->telemetry_dir = device_attributes_dir(SysPaths::from_env(), s->info.pci_address) + "/";
    return Device(std::move(s));
}

const DeviceInfo &Device::info() const {
    return state_->info;
}
const std::string &Device::path() const {
    return state_->path;
}
int Device::fd() const {
    return state_->fd;
}

std::optional<uint64_t> Device::memory_used() const {
    std::string v = state_->os->read_line(state_->telemetry_dir + "memory_used");
    uint64_t n = 0;
    auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
    if (v.empty() || ec != std::errc() || end != v.data() + v.size())
        return std::nullopt;
    return n;
}

Queue Device::queue(unsigned core) const {
    if (core >= state_->info.num_cores)
        throw Error(errc::invalid_argument,
                    fmt::format("{}: core {} does not exist: the device has {} core(s)",
                                state_->path, core, state_->info.num_cores));
    return Queue(*this, core);
}

} // namespace neuron
