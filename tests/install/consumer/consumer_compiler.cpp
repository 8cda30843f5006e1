// SPDX-License-Identifier: MIT
// A C++ program built against an installed graph compiler.
#include <cstdio>

#include <neuron/compiler/compile.hpp>
#include <neuron/compiler/text.hpp>

int main() {
    using namespace neuron::compiler;
    Graph g = parse("graph consumer\n"
                    "input x: fp32[3, 200]\n"
                    "y = gelu(x)\n"
                    "output y\n");
    Compiled c = compile(g);
    std::printf("%s: %zu bytes, %zu arguments\n", c.program.name().c_str(),
                c.program.bytes().size(), c.program.arguments().size());
    return c.program.arguments().size() == 2 ? 0 : 1;
}
