// SPDX-License-Identifier: MIT
#include "emit.hpp"

#include "../op_record.hpp"

namespace neuron::compiler::lower {

Kernel::Stats emit(Emitter &e, const FusionPlan &fusion) {
    const Graph &g = e.graph;
    for (uint32_t c = 0; c < e.chunks(); c++) {
        e.begin_chunk(c);
        for (uint32_t i = 0; i < g.nodes().size(); i++) {
            const Group &group = fusion.groups[i];
            e.begin_step(i, group);
            if (const KindLowering *l = kind_lowering(group.kind)) {
                l->emit(e, group);
                e.store(group.result);
            } else if ((g.node(i).op == Op::input || g.node(i).op == Op::constant) &&
                       e.is_output(i)) {
                e.read(i);
                e.store(i);
            }
        }
        e.end_chunk();
    }
    return e.finish();
}

} // namespace neuron::compiler::lower
