// SPDX-License-Identifier: MIT
#include "check.hpp"

namespace neuron::compiler::lower {

Usage check(const Graph &g, const CompileOptions &options) {
    if (options.isa_version >> 16 != isa_version() >> 16 || options.isa_version > isa_version())
        throw GraphError(fmt::format("target ISA {}.{}: this compiler emits ISA {}.0 to {}.{}",
                                     options.isa_version >> 16, options.isa_version & 0xffff,
                                     isa_version() >> 16, isa_version() >> 16,
                                     isa_version() & 0xffff));
    if (g.outputs().empty())
        throw GraphError(fmt::format("graph '{}' has no outputs", g.name()));
    Usage u;
    u.uses.assign(g.nodes().size(), 0);
    u.is_output.assign(g.nodes().size(), false);
    for (const Node &n : g.nodes())
        for (uint32_t o : n.operands)
            u.uses[o]++;
    for (uint32_t o : g.outputs())
        u.is_output[o] = true;
    for (const Node &n : g.nodes()) {
        if (n.type.shape.back() > max_cols)
            unsupported(g, n,
                        fmt::format("the last axis has {} elements; the row layout holds at most "
                                    "{} per partition",
                                    n.type.shape.back(), max_cols));
        if (rows_of(n.type) > (int64_t{1} << 31))
            unsupported(g, n, "more than 2^31 rows");
    }
    return u;
}

} // namespace neuron::compiler::lower
