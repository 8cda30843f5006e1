// SPDX-License-Identifier: MIT
// Running an example's program on a device through libneuron, and the
// command line shared by the example programs.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include <neuron/program.hpp>

#include "common/example.hpp"

namespace nex {

struct DeviceRunOptions {
    std::string device; ///< "" = the first device; else an index, node or PCI address
    unsigned core = 0;
    unsigned iterations = 1; ///< jobs to run (the first result is checked; all are timed)
    double timeout_s = 120;  ///< per job (the emulated device runs under TCG)
};

struct DeviceRun {
    std::vector<std::byte> output;
    std::string device; ///< the node used
    double load_ms = 0; ///< Device::load(): image and constants uploaded
    double upload_ms = 0;
    std::vector<double> job_ms; ///< submit -> fence signalled, per iteration
    double readback_ms = 0;
};

/// Device -> buffers -> Program load -> Queue submit -> Fence wait -> read back.
DeviceRun run_on_device(const Case &c, const DeviceRunOptions &o);

/// main() of an example program: options --dtype fp32|bf16, --device,
/// --core, --iterations, --seed, --save FILE, --disassemble, --help.
/// @p make builds the case for a dtype and seed; @p dtypes lists those it
/// supports. Exit status 0 within tolerance, 1 beyond it, 2 on errors.
int example_main(int argc, char **argv, const std::string &name, const std::string &summary,
                 const std::vector<neuron::DType> &dtypes,
                 const std::function<Case(neuron::DType, uint64_t)> &make);

} // namespace nex
