# SPDX-License-Identifier: MIT
"""The graph of one call of a lowered operator, built directly: its
inputs, the operator node and its results, with the values the lowering
reads (the call on the CPU on @p examples). It is what capture() records
for such a call, without tracing it (make_fx costs most of a small op's
compile); operators without a lowering of their own go through capture()
and PyTorch's decompositions."""

from __future__ import annotations

import operator
from typing import Any, Dict, List, Sequence, Tuple

import torch

from ..capture import Captured
from ..foreach import base_of, overload_taking, per_tensor_arguments
from ..lowering import UnsupportedOperatorError
from .signature import Call


def _literal(x: Any) -> Any:
    """A CPU scalar tensor mixed with device tensors, as the number it
    holds (capture() records it as a constant the lowering reads so)."""
    if isinstance(x, torch.Tensor) and x.device.type != "neuron" and x.dim() == 0:
        return x.item()
    return x


def _arguments(call: Call, tensors: List[Any], numbers: Sequence[Any] = ()
               ) -> Tuple[Tuple[Any, ...], Dict[str, Any]]:
    """The call's arguments with @p tensors for its neuron tensors and
    @p numbers for its numbers at call.number_positions (none: the numbers
    the call has)."""
    leaves = [_literal(x) for x in call.leaves]
    for pos, t in zip(call.tensor_positions, tensors):
        leaves[pos] = t
    for pos, v in zip(call.number_positions, numbers):
        leaves[pos] = v
    return call.arguments(leaves)


def number_input(value: float) -> torch.Tensor:
    """A number the program takes as an input: a float32 [1], which the
    lowering's arithmetic broadcasts as it does a literal."""
    return torch.tensor([value], dtype=torch.float32)


def capture_call(call: Call, examples: List[torch.Tensor], name: str,
                 numbers_as_inputs: bool = False) -> Captured:
    """With @p numbers_as_inputs, the call's floating-point numbers are
    inputs after its tensors (number_input()), so that one program serves
    every value of them."""
    graph = torch.fx.Graph()
    inputs = [graph.placeholder(f"input{i}") for i in range(len(examples))]
    numbers = [graph.placeholder(f"number{i}") for i in range(len(call.number_positions))] \
        if numbers_as_inputs else []
    args, kwargs = _arguments(call, inputs, numbers)
    op_node = graph.call_function(call.op, args, kwargs)

    number_examples = [number_input(call.leaves[i]) for i in call.number_positions] \
        if numbers_as_inputs else []
    inputs += numbers
    examples = list(examples) + number_examples
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


def capture_foreach(call: Call, examples: List[torch.Tensor], name: str,
                    numbers_as_inputs: bool = False) -> Captured:
    """The graph of a functional `_foreach` call (_foreach_mul.Scalar): its
    operator on each tensor (aten.mul.Scalar), one node each, their results
    the graph's outputs; its numbers inputs as capture_call() makes them."""
    base = base_of(call.op)
    if base is None:
        raise UnsupportedOperatorError(call.op.name(), "", "not a functional _foreach form")
    graph = torch.fx.Graph()
    inputs = [graph.placeholder(f"input{i}") for i in range(len(examples))]
    numbers = [graph.placeholder(f"number{i}") for i in range(len(call.number_positions))] \
        if numbers_as_inputs else []
    per_node = per_tensor_arguments(base, *_arguments(call, inputs, numbers))
    per_value = per_tensor_arguments(base, *_arguments(call, examples))
    if per_node is None or per_value is None:
        raise UnsupportedOperatorError(call.op.name(), "", "arguments its operator does not take")
    op = overload_taking(base, *per_value[0])
    if op is None:
        raise UnsupportedOperatorError(call.op.name(), "", f"no overload of {base} takes them")
    number_examples = [number_input(call.leaves[i]) for i in call.number_positions] \
        if numbers_as_inputs else []
    values: Dict[torch.fx.Node, Any] = dict(zip(inputs + numbers,
                                                list(examples) + number_examples))
    outs = []
    with torch.no_grad():
        for (args, kwargs), (eargs, ekwargs) in zip(per_node, per_value):
            node = graph.call_function(op, args, kwargs)
            values[node] = op(*eargs, **ekwargs)
            outs.append(node)
    graph.output(tuple(outs))
    gm = torch.fx.GraphModule(torch.nn.Module(), graph)
    inputs += numbers
    return Captured(name=name, gm=gm, parameters={}, buffers={}, inputs=inputs,
                    input_names=[n.name for n in inputs],
                    example_inputs=tuple(list(examples) + number_examples),
                    values=values, tuple_output=True)
