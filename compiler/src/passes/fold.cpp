// SPDX-License-Identifier: MIT
#include "fold.hpp"

namespace neuron::compiler::lower {

Folded fold(const Graph &g, const Usage &usage) {
    Folded folded;
    for (const Node &n : g.nodes())
        if (n.op == Op::matmul && n.transpose_b && g.node(n.operands[1]).op == Op::constant) {
            uint32_t c = n.operands[1];
            const Node &cn = g.node(c);
            if (usage.uses[c] != 1 || usage.is_output[c])
                unsupported(g, n, "a transposed constant operand must have no other use");
            const Shape &s = cn.type.shape;
            int64_t x = s[s.size() - 2], y = s.back(), batch = cn.type.elements() / (x * y);
            auto v = constant_values(cn), t = v;
            for (int64_t b = 0; b < batch; b++)
                for (int64_t r = 0; r < x; r++)
                    for (int64_t q = 0; q < y; q++)
                        t[static_cast<size_t>(b * x * y + q * x + r)] =
                            v[static_cast<size_t>(b * x * y + r * y + q)];
            folded[c] = std::move(t);
        }
    return folded;
}

} // namespace neuron::compiler::lower
