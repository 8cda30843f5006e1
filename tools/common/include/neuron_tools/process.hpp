// SPDX-License-Identifier: MIT
// Processes using neuron devices, from /proc/<pid>/fdinfo (drm-usage-stats).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "neuron_tools/sysfs.hpp"

namespace neuron::tools {

/// One open file of a neuron device (a DRM client), from its fdinfo.
struct Client {
    std::string pdev;                       ///< drm-pdev: PCI address of the device
    std::optional<uint64_t> client_id;      ///< drm-client-id
    std::map<unsigned, uint64_t> engine_ns; ///< drm-engine-core<N>, ns
    uint64_t device_total = 0;              ///< drm-total-device, bytes
    uint64_t device_resident = 0;           ///< drm-resident-device, bytes
    uint64_t host_total = 0;                ///< drm-total-host, bytes
    uint64_t host_resident = 0;             ///< drm-resident-host, bytes
    int fd = -1;                            ///< the fd it was found on (first one)
};

/// Parses an fdinfo file; nullopt unless it has `drm-driver: neuron`.
std::optional<Client> parse_fdinfo(std::string_view text);

/// A process and its neuron clients (each counted once, see scan_processes).
struct Process {
    int pid = 0;
    std::string command; ///< /proc/<pid>/comm
    std::vector<Client> clients;
};

/// What one process uses on one device, summed over its clients.
struct DeviceUsage {
    uint64_t memory = 0;      ///< device memory, bytes (drm-total-device)
    uint64_t host_memory = 0; ///< host memory buffers, bytes (drm-total-host)
    std::map<unsigned, uint64_t> engine_ns;
    unsigned clients = 0;
    /// Cores this process has run work on (busy time > 0), ascending.
    std::vector<unsigned> cores() const;
};

DeviceUsage usage_on(const Process &p, std::string_view bdf);

struct ProcessScan {
    std::vector<Process> processes; ///< ordered by pid
    /// Processes whose open files could not be inspected (other users'
    /// processes, for a user without CAP_SYS_PTRACE).
    unsigned hidden = 0;
};

/// Scans /proc/<pid>/fd for accel nodes and reads their fdinfo. A file shared
/// by several fds or processes (dup, fork, SCM_RIGHTS) is one client, counted
/// for the lowest pid: clients are keyed by (drm-pdev, drm-client-id), and by
/// kcmp(2) when the kernel gives no client id.
ProcessScan scan_processes(const Roots &roots);

} // namespace neuron::tools
