# SPDX-License-Identifier: MIT
"""The lowering of FX graphs of ATen operators (torch_neuronx.capture)
into the neuron compiler's IR graph: one record per operator (registry.py,
ops/), one context that walks the graph (context.py). torch_neuronx.trace,
its partitioner and analyze lower through it."""

from __future__ import annotations

import operator
from typing import Any, Dict, List, Optional, Set, Tuple

import torch

from . import ops  # noqa: F401  (registers the lowerings)
from ..capture import Captured
from .context import BOOL_INPUT_DTYPE, Context, Lowered, is_operator
from .errors import UnsupportedOperatorError
from .registry import LOWERINGS, lowering, operator_name, supported_operators
from .values import Expanded, External, Tensor, Transposed, Weight

SUPPORTED_OPERATORS: Tuple[str, ...] = supported_operators()

__all__ = ["BOOL_INPUT_DTYPE", "Lowered", "SUPPORTED_OPERATORS", "UnsupportedOperatorError",
           "classify", "is_operator", "lower", "lower_part", "lowering", "operator_name",
           "LOWERINGS"]


def _bind_constants(ctx: Context, node: torch.fx.Node) -> bool:
    """Binds a placeholder of a parameter or buffer, or a get_attr."""
    c = ctx.captured
    if node in c.parameters:
        ctx.env[node] = Weight(ctx.value(node), c.parameters[node], parameter=True)
    elif node in c.buffers:
        ctx.env[node] = Weight(ctx.value(node), c.buffers[node])
    elif node.op == "get_attr":
        ctx.env[node] = Weight(ctx.value(node), node.name)
    else:
        return False
    return True


def _walk(ctx: Context, lower_op: Any) -> None:
    """Every node but the inputs and the output: getitem, folding, then
    @p lower_op(node) for operators."""
    for node in ctx.captured.gm.graph.nodes:
        ctx.node = node
        if _bind_constants(ctx, node) or node.op in ("placeholder", "output"):
            continue
        if node.op == "call_function" and node.target is operator.getitem:
            ctx.lower_getitem(node)
        elif is_operator(node):
            if not ctx.fold(node):
                lower_op(node)
        elif node.op == "call_function" or node.op == "call_module":
            raise ctx.unsupported()


def _outputs(ctx: Context) -> List[torch.fx.Node]:
    out = next(n for n in ctx.captured.gm.graph.nodes if n.op == "output").args[0]
    return list(out) if isinstance(out, (tuple, list)) else [out]


def lower(captured: Captured, name: Optional[str] = None,
          scalar_results: bool = False, bool_inputs_u8: bool = False) -> Lowered:
    """The whole graph as one IR graph; raises UnsupportedOperatorError at
    the first operator the device cannot run. @p scalar_results: a
    0-dimensional result of a reduction is lowered as the IR's [1], which
    the caller views as 0-dimensional (Context.scalar_results). @p
    bool_inputs_u8: bool inputs are the IR's u8, which the caller passes
    as they are (Context.bool_inputs_u8); else they are listed in the
    result's bool_inputs, for the caller to convert."""
    ctx = Context(captured, name or captured.name)
    ctx.scalar_results = scalar_results
    ctx.bool_inputs_u8 = bool_inputs_u8
    inputs: List[str] = []
    bool_inputs: List[int] = []
    for i, (node, x, name) in enumerate(zip(captured.inputs, captured.example_inputs,
                                            captured.input_names)):
        ctx.node = node
        t = ctx.input(name, x.shape, x.dtype)
        ctx.env[node] = t
        inputs.append(t.name)
        if x.dtype == torch.bool and not bool_inputs_u8:
            bool_inputs.append(i)
    _walk(ctx, ctx.lower_node)
    outputs: List[str] = []
    for node in _outputs(ctx):
        ctx.node = node
        if not isinstance(node, torch.fx.Node) or node not in ctx.env:
            raise RuntimeError(f"torch_neuronx.trace: the traced function returns {node!r}; "
                               "only tensors (or a tuple of tensors) are supported")
        t = ctx.result(ctx.env[node], outputs)
        ctx.graph.output(t.node)
        outputs.append(t.name)
    return Lowered(ctx.graph, ctx.weight_names, ctx.weights, inputs, outputs,
                   captured.tuple_output, ctx.log, tuple(bool_inputs))


def _bind_externals(ctx: Context) -> None:
    for node, name in zip(ctx.captured.inputs, ctx.captured.input_names):
        ctx.env[node] = External(name, ctx.value(node), node)


def _bind_outside(ctx: Context, node: torch.fx.Node) -> None:
    """The result of @p node, an operator outside the part being lowered."""
    v = ctx.value(node)
    if isinstance(v, torch.Tensor):
        ctx.env[node] = External(node.name, v, node)
    elif isinstance(v, (tuple, list)):
        ctx.env[node] = [External(f"{node.name}_{i}", x, node, i)
                         if isinstance(x, torch.Tensor) else None for i, x in enumerate(v)]
    else:
        ctx.env.pop(node, None)


def classify(captured: Captured, to_cpu: frozenset = frozenset(), scalar_results: bool = False
             ) -> Tuple[Dict[torch.fx.Node, Optional[UnsupportedOperatorError]],
                        Set[torch.fx.Node]]:
    """For each operator node, in graph order: None if the device runs it,
    with its inputs from wherever they come, else why not; and the
    operators folded into constants (computed when traced). @p to_cpu:
    node names or ATen names ("aten::relu") kept on the CPU.
    @p scalar_results: as lower_part's."""
    ctx = Context(captured, captured.name)
    ctx.scalar_results = scalar_results
    _bind_externals(ctx)
    result: Dict[torch.fx.Node, Optional[UnsupportedOperatorError]] = {}

    def place(node: torch.fx.Node) -> None:
        try:
            if node.name in to_cpu or operator_name(node.target) in to_cpu:
                raise ctx.unsupported("kept on the CPU (PartitionerConfig.ops_to_partition)")
            ctx.lower_node(node)
            result[node] = None
        except UnsupportedOperatorError as e:
            result[node] = e
            _bind_outside(ctx, node)
    _walk(ctx, place)
    folded = {n for n in captured.gm.graph.nodes if is_operator(n) and n not in result}
    return {n: result.get(n) for n in captured.gm.graph.nodes if is_operator(n)}, folded


def lower_part(captured: Captured, name: str, members: frozenset,
               outputs: List[torch.fx.Node], scalar_results: bool = False
               ) -> Tuple[Lowered, List[External]]:
    """The operator nodes @p members as the IR graph @p name computing
    @p outputs; every other tensor they use is an input. Returns the
    lowered graph and what its inputs are, in order. @p scalar_results:
    0-dimensional values, results and inputs from outside, are the IR's
    [1], which the caller passes and views as 0-dimensional."""
    ctx = Context(captured, name)
    ctx.scalar_results = scalar_results
    _bind_externals(ctx)

    def lower_op(node: torch.fx.Node) -> None:
        if node in members:
            ctx.lower_node(node)
        else:
            _bind_outside(ctx, node)
    _walk(ctx, lower_op)
    names: List[str] = []
    for node in outputs:
        ctx.node = node
        if node not in ctx.env:
            # a result of an operator whose lowering computes only others
            # (native_layer_norm's mean and rstd): that operator is not
            # the device's where this one is used
            if node.target is operator.getitem:
                ctx.node = node.args[0]  # type: ignore[assignment]
                raise ctx.unsupported(f"its result {node.args[1]} is used, which the device "
                                      "does not compute")
            raise ctx.unsupported("its result is used, which the device does not compute")
        v = ctx.env[node]
        source = v.source if isinstance(v, (Expanded, Transposed)) else v
        if isinstance(source, Tensor) and source.dtype == torch.bool \
                and ctx.graph.dtype(source.node) != "u8":
            # a bool input moved (a comparison's u8 mask is returned as bool)
            raise ctx.unsupported("its result is a bool tensor moved from a bool input, which "
                                  "a program does not return")
        t = ctx.result(v, names)
        ctx.graph.output(t.node)
        names.append(t.name)
    inputs = [e.lowered.name for e in ctx.externals if e.lowered is not None]
    return (Lowered(ctx.graph, ctx.weight_names, ctx.weights, inputs, names, False, ctx.log,
                    ir_nodes=ctx.ir_nodes),
            list(ctx.externals))
