# SPDX-License-Identifier: MIT
"""The graph of one call of a lowered operator, built directly: its
inputs, the operator node and its results, with the values the lowering
reads (the call on the CPU on @p examples). It is what capture() records
for such a call, without tracing it (make_fx costs most of a small op's
compile); operators without a lowering of their own go through capture()
and PyTorch's decompositions."""

from __future__ import annotations

import operator
from typing import Any, Dict, List, Tuple

import torch

from ..capture import Captured
from .signature import Call


def _literal(x: Any) -> Any:
    """A CPU scalar tensor mixed with device tensors, as the number it
    holds (capture() records it as a constant the lowering reads so)."""
    if isinstance(x, torch.Tensor) and x.device.type != "neuron" and x.dim() == 0:
        return x.item()
    return x


def _arguments(call: Call, tensors: List[Any]) -> Tuple[Tuple[Any, ...], Dict[str, Any]]:
    """The call's arguments with @p tensors for its neuron tensors."""
    leaves = [_literal(x) for x in call.leaves]
    for pos, t in zip(call.tensor_positions, tensors):
        leaves[pos] = t
    return call.arguments(leaves)


def capture_call(call: Call, examples: List[torch.Tensor], name: str) -> Captured:
    graph = torch.fx.Graph()
    inputs = [graph.placeholder(f"input{i}") for i in range(len(examples))]
    args, kwargs = _arguments(call, inputs)
    op_node = graph.call_function(call.op, args, kwargs)

    values: Dict[torch.fx.Node, Any] = dict(zip(inputs, examples))
    eargs, ekwargs = _arguments(call, examples)
    with torch.no_grad():
        result = call.op(*eargs, **ekwargs)
    values[op_node] = result
    tuple_output = isinstance(result, (tuple, list))
    if tuple_output:
        outs = []
        for i, r in enumerate(result):
            item = graph.call_function(operator.getitem, (op_node, i))
            values[item] = r
            outs.append(item)
        graph.output(tuple(outs))
    else:
        graph.output(op_node)
    gm = torch.fx.GraphModule(torch.nn.Module(), graph)
    return Captured(name=name, gm=gm, parameters={}, buffers={}, inputs=inputs,
                    input_names=[n.name for n in inputs], example_inputs=tuple(examples),
                    values=values, tuple_output=tuple_output)
