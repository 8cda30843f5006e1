# SPDX-License-Identifier: MIT
"""One FX graph of AOTAutograd (a forward, a backward or an inference
graph of core ATen operators, the parameters among its inputs) made a
module that runs it on `neuron` tensors: each run of operators the
lowering takes is one device program (programs.py), the other operators
run as they are, eagerly on the device (where the device cannot run one,
the eager path runs it on the CPU, logged once). It is the partitioner
of torch_neuronx.trace (partition.py) over the same lowering, with the
programs called on device tensors instead of TorchScript's."""

from __future__ import annotations

import logging
import operator
import re
import time
from typing import Any, Callable, Dict, List, Optional, Sequence, Set, Tuple

import torch
from torch.utils._pytree import tree_map

from ..capture import Captured, Recorder
from ..lowering import classify, is_operator
from ..lowering.registry import operator_name
from ..partition import analyze_graph, lower_subgraphs, partitioned_graph
from . import _torch, programs
from .programs import Program

log = logging.getLogger("torch_neuronx")


def _to_cpu(value: Any) -> Any:
    return tree_map(lambda x: x.cpu() if isinstance(x, torch.Tensor) and x.device.type == "neuron"
                    else x, value)


class _HostRecorder(Recorder):
    """Records every node's value on the CPU: the graph's factories
    (zeros, full, arange) make their tensors there instead of on
    `neuron`, next to the CPU example inputs, and the graph's constants
    (get_attr) are copied there."""

    def call_function(self, target: Any, args: Tuple[Any, ...], kwargs: Dict[str, Any]) -> Any:
        device = kwargs.get("device")
        if device is not None and torch.device(device).type == "neuron":
            kwargs = {**kwargs, "device": torch.device("cpu")}
        return _to_cpu(super().call_function(target, args, kwargs))

    def get_attr(self, target: Any, args: Tuple[Any, ...], kwargs: Dict[str, Any]) -> Any:
        return _to_cpu(super().get_attr(target, args, kwargs))


def static_shapes(example_inputs: Sequence[Any]) -> bool:
    """Whether every input has a static shape (no SymInt)."""
    for x in example_inputs:
        if isinstance(x, torch.SymInt):
            return False
        if isinstance(x, torch.Tensor) and any(isinstance(s, torch.SymInt) for s in x.shape):
            return False
    return True


def _captured(gm: torch.fx.GraphModule, example_inputs: Sequence[Any], name: str) -> Captured:
    """@p gm as the lowering takes a graph: its tensor placeholders are
    its inputs (parameters included: they are never constants of a
    program), and every node's value on CPU tensors of zeros of the
    inputs' shapes and dtypes (the lowering reads shapes, dtypes and the
    values of what it folds: constants the graph makes)."""
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    if len(placeholders) != len(example_inputs):
        raise RuntimeError(f"neuron: graph {name} has {len(placeholders)} inputs, "
                           f"{len(example_inputs)} example inputs")
    examples = [torch.zeros(tuple(x.shape), dtype=x.dtype) if isinstance(x, torch.Tensor)
                else x for x in example_inputs]
    recorder = _HostRecorder(gm)
    with torch.no_grad():
        recorder.run(*examples)
    tensors = [(n, x) for n, x in zip(placeholders, examples) if isinstance(x, torch.Tensor)]
    return Captured(name=name, gm=gm, parameters={}, buffers={},
                    inputs=[n for n, _ in tensors], input_names=[n.name for n, _ in tensors],
                    example_inputs=tuple(x for _, x in tensors), values=recorder.values,
                    tuple_output=True)


# The IR value a compiler's error names first ("neuron compiler: 'sum_52.rows0'
# (reshape of ...): ...": sum_52, or a piece of it).
_REFUSED = re.compile(r"'([A-Za-z_][A-Za-z0-9_]*)[.']")


def _programs(captured: Captured, analysis: Any,
              prefix: str) -> Tuple[List[Any], List[Any], List[Any]]:
    """The device's parts of the graph, lowered and compiled. An operator
    whose IR the compiler refuses (a form the lowering cannot tell it does
    not take: a reduction's layout) runs eagerly instead, and the parts
    are formed again; a part refused as a whole is split at its middle
    operator, which runs eagerly."""
    to_cpu: Set[str] = set()
    while True:
        subgraphs, parts = lower_subgraphs(captured, analysis, to_cpu, prefix)
        kernels: List[Any] = []
        try:
            for lowered, _ in parts:
                kernels.append(programs.kernel_of(lowered))
            return subgraphs, parts, kernels
        except RuntimeError as e:
            m = _REFUSED.search(str(e))
            lowered = parts[len(kernels)][0]
            node = lowered.ir_nodes.get(m.group(1)) if m else None
            if node is None:
                # refused as a whole (more arguments than a job binds): its
                # middle operator runs eagerly, which splits it in two
                members = subgraphs[len(kernels)].members
                node = members[len(members) // 2].name if len(members) > 1 else None
            if node is None or node in to_cpu:
                raise
            log.info("neuron: %s runs eagerly: %s", node, str(e).splitlines()[0])
            to_cpu.add(node)
            analysis.placement, analysis.folded = classify(captured, frozenset(to_cpu),
                                                           analysis.scalar_results)


def _check_outputs(kernel: Any, expected: List[Any], name: str) -> None:
    got = kernel.output_meta()
    for i, (e, g) in enumerate(zip(expected, got)):
        same_shape = tuple(e.shape) == tuple(g.shape) or e.dim() == 0 and tuple(g.shape) == (1,)
        if e.dtype != g.dtype or not same_shape:
            raise RuntimeError(f"neuron: program {name}: output {i} is {g.dtype}{list(g.shape)}, "
                               f"the graph's value {e.dtype}{list(e.shape)}")


def _precomputed(captured: Captured, analysis: Any, example_inputs: Sequence[Any],
                 root: torch.nn.Module) -> Callable[[torch.fx.Node], Optional[str]]:
    """The rebuilt graph's source of the values the graph makes from
    constants alone (a factory, arithmetic on it: GPT-2's positions,
    arange(n) + 0) that an operator outside the programs uses: their
    traced value, a buffer of @p root on the device copied at each call,
    instead of eager operators (int64 ones on the CPU)."""
    device = next((x.device for x in example_inputs
                   if isinstance(x, torch.Tensor) and x.device.type == "neuron"), None)
    constant: Set[torch.fx.Node] = set()
    for n in captured.gm.graph.nodes:
        if n in analysis.folded and all(a in constant or a.op == "get_attr"
                                        for a in n.all_input_nodes):
            constant.add(n)

    def used_outside(n: torch.fx.Node) -> bool:
        return any(u not in analysis.folded and (not is_operator(u)
                                                 or analysis.placement.get(u) is not None)
                   for u in n.users)

    def precomputed(n: torch.fx.Node) -> Optional[str]:
        if device is None or n not in constant or not used_outside(n):
            return None
        attr = f"f_{n.name}"
        root.register_buffer(attr, captured.values[n].to(device))
        return attr
    return precomputed


def compile_graph(gm: torch.fx.GraphModule, example_inputs: Sequence[Any],
                  kind: str) -> torch.fx.GraphModule:
    """@p gm (AOTAutograd's @p kind graph: "forward", "backward",
    "inference"), its example inputs of static shapes, as a module whose
    device programs are compiled."""
    if not static_shapes(example_inputs):
        raise NotImplementedError(f"neuron: the {kind} graph has dynamic shapes")
    # The lowering computes with real tensors (constants it folds, the
    # programs' constants), not the fake ones of the caller's mode.
    started = time.perf_counter()
    try:
        with _torch.real_tensors():
            return _compile(gm, example_inputs, kind)
    finally:
        programs.statistics.graph_seconds += time.perf_counter() - started


def _compile(gm: torch.fx.GraphModule, example_inputs: Sequence[Any],
             kind: str) -> torch.fx.GraphModule:
    number = programs.statistics.graphs
    programs.statistics.graphs += 1
    name = f"{kind}{number}"
    captured = _captured(gm, example_inputs, name)
    analysis = analyze_graph(captured, scalar_results=True)
    subgraphs, parts, kernels = _programs(captured, analysis, f"{name}_program")
    root = torch.nn.Module()
    for i, (s, kernel) in enumerate(zip(subgraphs, kernels)):
        program = f"{name}_program{i}"
        expected = [captured.values[n] for n in s.outputs]
        _check_outputs(kernel, expected, program)
        root.add_module(f"program{i}", Program(kernel, program, [tuple(e.shape) for e in expected]))

    def call(graph: torch.fx.Graph, i: int, args: List[torch.fx.Node]) -> torch.fx.Node:
        return graph.call_module(f"program{i}", tuple(args))

    def constant(n: torch.fx.Node, target: str) -> str:
        attr = "c_" + target.replace(".", "_")
        value = operator.attrgetter(target)(gm)
        if isinstance(value, torch.Tensor):
            root.register_buffer(attr, value)
        else:
            setattr(root, attr, value)
        return attr
    graph = partitioned_graph(captured, subgraphs, [p[1] for p in parts], call, constant, root,
                              precomputed=_precomputed(captured, analysis, example_inputs, root))
    eager = [n for n, e in analysis.placement.items() if e is not None]
    log.info("neuron: %s: %d operators in %d device programs, %d eagerly%s", name,
             sum(len(s.members) for s in subgraphs), len(subgraphs), len(eager),
             (": " + ", ".join(sorted({operator_name(n.target) for n in eager}))) if eager else "")
    return torch.fx.GraphModule(root, graph, class_name=name)
