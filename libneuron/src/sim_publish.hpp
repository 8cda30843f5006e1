// SPDX-License-Identifier: MIT
// Where simulated devices publish their counters: the one definition shared
// by the simulator (which writes the tree) and libneuron's readers.
//
// Every simulated device of a process writes <dir>/<pid>.<n>/, a tree
// shaped like the driver's (docs/telemetry.md): sys/class/accel/accel0,
// sys/bus/pci/devices/<bdf>/neuron/ with the same attributes and
// counters, sys/module/neuron/version, and fdinfo/<client> with each open
// file's drm-usage-stats. The tools read it with their sysfs and fdinfo
// readers (docs/tools.md, "The simulator").
#pragma once

#include <cstdlib>
#include <string>

#include <unistd.h>

namespace neuron::detail {

/// $NEURON_SIM_DIR, else $XDG_RUNTIME_DIR/neuron-sim, else /tmp/neuron-sim-<uid>.
inline std::string sim_publish_dir() {
    if (const char *d = std::getenv("NEURON_SIM_DIR"); d && *d)
        return d;
    if (const char *r = std::getenv("XDG_RUNTIME_DIR"); r && *r)
        return std::string(r) + "/neuron-sim";
    return "/tmp/neuron-sim-" + std::to_string(getuid());
}

} // namespace neuron::detail
