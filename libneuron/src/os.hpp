// SPDX-License-Identifier: MIT
// The OS seam: every system call libneuron makes goes through an Os.
//
// RealOs (os.cpp) is the only code of the library that calls the kernel.
// Unit tests substitute a fake; the simulator (libneuron-sim.so) is an Os
// that emulates neuron.ko's UAPI in-process, so every code path above this
// interface is the same for the driver, a fake and the simulator.
//
// The interface is shared by libneuron.so and libneuron-sim.so, which are
// built and installed together: a change to it bumps sim_abi_version.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <neuron/device.hpp>
#include <neuron/export.h>

struct neuron_device;

namespace neuron::detail {

/// Owner and mode of a device node, for permission hints.
struct NodeMode {
    uint32_t mode = 0; ///< st_mode
    uint32_t gid = 0;
    std::string group; ///< the group's name, or its number
};

class Os {
  public:
    virtual ~Os() = default;

    // Device files. Every call returns 0 (or a result) or a positive errno,
    // never touching the caller's errno.

    /// open(2) of a device node: an fd, or -errno.
    virtual int open(const std::string &path) = 0;
    /// close(2) of an fd this Os returned (device file or sync file).
    virtual void close(int fd) = 0;
    /// ioctl(2) on a device or sync file, restarted on EINTR/EAGAIN: 0 or errno.
    virtual int ioctl(int fd, unsigned long request, void *arg) = 0;
    /// mmap(2) of @p len bytes at fake offset @p offset of @p fd, shared,
    /// read-write: the address, or nullptr with @p err set.
    virtual void *mmap(int fd, size_t len, uint64_t offset, int &err) = 0;
    virtual void munmap(void *addr, size_t len) = 0;

    // sysfs and device nodes, for enumeration and error hints.

    /// Names of the entries of a directory; empty if it cannot be read.
    virtual std::vector<std::string> list_dir(const std::string &path) = 0;
    /// The target of a symbolic link.
    virtual std::optional<std::string> read_link(const std::string &path) = 0;
    /// The canonical path (realpath(3)).
    virtual std::optional<std::string> real_path(const std::string &path) = 0;
    /// The first line of a file, without its newline; empty if unreadable.
    virtual std::string read_line(const std::string &path) = 0;
    virtual bool exists(const std::string &path) = 0;
    virtual std::optional<NodeMode> node_mode(const std::string &path) = 0;
};

/// The kernel's Os: the one instance the library uses unless told otherwise.
std::shared_ptr<Os> real_os();

/// Opens device file @p node through @p os: checks the DRM driver name and
/// the UAPI version and reads every GET_PARAM. Exported for the unit tests,
/// which drive the library through a fake Os.
NEURON_EXPORT Device open_device(std::shared_ptr<Os> os, const std::string &node);

/// The C API's handle of @p dev (neuron_device_close() frees it), so the
/// unit tests reach the C API through a fake Os too.
NEURON_EXPORT neuron_device *c_device(Device dev);

/// The simulator's entry point in libneuron-sim.so.0 (extern "C"): a new
/// simulated device configured by @p options ("cores=2,mem=256M", may be
/// empty), or nullptr with a message in @p err.
inline constexpr const char *sim_entry_symbol = "neuron_sim_create_os";
inline constexpr uint32_t sim_abi_version = 1;
using SimCreateFn = Os *(*)(uint32_t abi_version, const char *options, char *err, size_t errlen);
/// Its check of @p options: 0 if neuron_sim_create_os() would take them,
/// else -1 with what is wrong in @p err (the same parser; no device is made).
inline constexpr const char *sim_check_symbol = "neuron_sim_check_options";
using SimCheckFn = int (*)(uint32_t abi_version, const char *options, char *err, size_t errlen);

} // namespace neuron::detail
