// SPDX-License-Identifier: MIT
// Graph inputs and constants: no instruction of their own; a value is
// loaded into SBUF by DMA right before its first use.
#include "../op_record.hpp"

namespace neuron::compiler::lower {

namespace {

// Graph::input() and Graph::constant() declare them, with their types.
Type declared_elsewhere(InferContext &c) {
    throw c.fail("inputs and constants are declared with input() and constant()");
}

Kind loaded_on_use(const Graph &, const Node &) {
    return Kind::none;
}

} // namespace

extern const OpRecord input_record{
    .op = Op::input,
    .name = "input",
    .infer = declared_elsewhere,
    .kind = loaded_on_use,
};
extern const OpRecord constant_record{
    .op = Op::constant,
    .name = "const",
    .infer = declared_elsewhere,
    .kind = loaded_on_use,
};

} // namespace neuron::compiler::lower
