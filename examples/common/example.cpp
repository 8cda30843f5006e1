// SPDX-License-Identifier: MIT
#include "common/example.hpp"

#include <stdexcept>

#include <fmt/format.h>

namespace nex {

uint64_t argument_size(const neuron::Program &p, const std::string &name) {
    const neuron::ArgumentInfo *a = p.find_argument(name);
    if (!a)
        throw std::invalid_argument(
            fmt::format("program '{}' has no argument '{}'", p.name(), name));
    return a->size;
}

ErrorStats check(const Case &c, std::span<const std::byte> output) {
    return compare(unpack(c.output_dtype, output), c.reference, c.tolerance);
}

std::string describe_program(const Case &c) {
    const auto &s = c.stats;
    uint32_t insns = 0, waits = 0, signals = 0;
    for (unsigned e = 0; e < 4; e++) {
        insns += s.insns[e];
        waits += s.waits[e];
        signals += s.signals[e];
    }
    return fmt::format("{} instructions (tensor {}, vector {}, scalar {}, sync {}) + {} semaphore "
                       "waits and {} signals; {:.2f} MiB of constants; {:.1f} MFLOP of matmul",
                       insns, s.insns[0], s.insns[1], s.insns[2], s.insns[3], waits, signals,
                       static_cast<double>(c.program.constants().size()) / (1 << 20),
                       static_cast<double>(c.flops) / 1e6);
}

} // namespace nex
