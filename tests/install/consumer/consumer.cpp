// SPDX-License-Identifier: MIT
// A C++ program built against an installed libneuron.
#include <cstdio>

#include <neuron/neuron.hpp>

int main() {
    using namespace neuron;
    std::printf("libneuron %s (C++)\n", version());
    ProgramBuilder b("consumer");
    auto x = b.argument("x", DType::fp32, {128, 4}, Direction::inout);
    auto t = b.sbuf("t", DType::fp32, 4);
    b.sync().dma_load(t.tap(), x.at(0, 16)).dma_store(x.at(0, 16), t.tap());
    Program p = b.finish();
    std::printf("%s", disassemble(p).c_str());
    try {
        Program::parse({});
        return 1;
    } catch (const Error &e) {
        if (e.code() != errc::invalid_program)
            return 1;
    }
    return enumerate().size() < 1000 ? 0 : 1;
}
