// SPDX-License-Identifier: MIT
// libFuzzer target: the program container parser and validator must never
// crash, hang or read out of bounds, and must agree with each other.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <span>

#include <neuron/program.hpp>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    std::span<const std::byte> in(reinterpret_cast<const std::byte *>(data), size);
    auto err = neuron::validate(in);
    try {
        neuron::Program p = neuron::Program::parse(in);
        if (err)
            std::abort(); // parse accepted what validate rejected
        auto img = p.device_image();
        if (img.size() < 64)
            std::abort();
        (void)neuron::disassemble(p);
    } catch (const neuron::Error &e) {
        if (!err || e.code() != neuron::errc::invalid_program)
            std::abort();
    }
    if (err && err->offset > size)
        std::abort(); // offsets point into the input (or at its end)
    return 0;
}
