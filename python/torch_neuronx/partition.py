# SPDX-License-Identifier: MIT
"""The graph partitioner (torch_neuronx.trace(..., partitioner_config=...)):
the operators the device does not run stay ATen nodes of the captured
graph and run on the CPU; each run of device operators between them is
compiled into one program, called through torch.ops.neuron.forward_v2 with
its torch.classes.neuron.Model an attribute of the returned module, which
is scripted so that torch.jit.save and torch.jit.load keep it."""

from __future__ import annotations

import json
import operator
import re
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Set, Tuple, Union

import torch

from ._version import __version__
from .capture import Captured, call_site, stack_frames
from .program import compile_lowered, script
from .lowering import (Lowered, UnsupportedOperatorError, classify, is_operator, lower_part,
                       operator_name)
from .lowering.values import External

Placement = Dict[torch.fx.Node, Optional[UnsupportedOperatorError]]

_TRACE_KWARGS = {"compiler_workdir", "compiler_args"}
_ANALYZE_PARAMETERS = {"compiler_workdir", "additional_ignored_ops", "max_workers"}


class PartitionWarning(UserWarning):
    """Operators of a traced model run on the CPU (one warning a trace)."""


@dataclass(kw_only=True)
class PartitionerConfig:
    """How torch_neuronx.trace partitions a graph between the device and the
    CPU, with torch-neuronx's fields:

    - trace_kwargs: compiler_workdir and compiler_args for the device
      subgraphs (else trace's own);
    - model_support_percentage_threshold: the fraction (0 to 1) of the
      operators that must run on the device, else ValueError;
    - min_subgraph_size: each device subgraph has at least this many
      operators, else ValueError (-1: no minimum);
    - max_subgraph_count: at most this many device subgraphs, else
      ValueError (-1: no maximum);
    - ops_to_partition: aten operators ("aten::relu") kept on the CPU even
      though the device runs them;
    - analyze_parameters: torch_neuronx.analyze's compiler_workdir,
      additional_ignored_ops and max_workers."""
    trace_kwargs: Optional[Dict[str, Any]] = None
    model_support_percentage_threshold: float = 0.5
    min_subgraph_size: int = -1
    max_subgraph_count: int = -1
    ops_to_partition: Optional[Set[str]] = None
    analyze_parameters: Optional[Dict[str, Any]] = None

    def __post_init__(self) -> None:
        if not 0.0 <= self.model_support_percentage_threshold <= 1.0:
            raise ValueError("PartitionerConfig: model_support_percentage_threshold is "
                             f"{self.model_support_percentage_threshold}, not between 0 and 1")
        for f in ("min_subgraph_size", "max_subgraph_count"):
            v = getattr(self, f)
            if v != -1 and v < 1:
                raise ValueError(f"PartitionerConfig: {f} is {v}: it is -1 (no limit) or >= 1")
        for f, allowed in (("trace_kwargs", _TRACE_KWARGS),
                           ("analyze_parameters", _ANALYZE_PARAMETERS)):
            unknown = set(getattr(self, f) or {}) - allowed
            if unknown:
                raise TypeError(f"PartitionerConfig: {f}: unsupported keys "
                                f"{', '.join(sorted(unknown))} (supported: "
                                f"{', '.join(sorted(allowed))})")
        for op in self.ops_to_partition or ():
            if not op.startswith("aten::"):
                raise ValueError(f"PartitionerConfig: ops_to_partition: {op!r} is not "
                                 "an aten operator name (\"aten::<operator>\")")


def _op_graph(node: torch.fx.Node) -> str:
    """@p node alone in a graph whose inputs are its inputs."""
    g = torch.fx.Graph()
    mapping: Dict[torch.fx.Node, torch.fx.Node] = {}
    for a in node.all_input_nodes:
        mapping[a] = g.placeholder(a.name)
    g.output(g.node_copy(node, lambda a: mapping[a]))
    return str(g)


def _call_stack(node: torch.fx.Node) -> str:
    return "".join(f + "\n" for f in stack_frames(node))


@dataclass
class Analysis:
    """Where each operator of a captured graph can run."""
    captured: Captured
    placement: Placement  # in graph order
    folded: Set[torch.fx.Node]  # computed when traced: constants
    ignored: Set[str] = field(default_factory=set)
    scalar_results: bool = False

    def counted(self) -> List[Tuple[torch.fx.Node, Optional[UnsupportedOperatorError]]]:
        return [(n, e) for n, e in self.placement.items()
                if operator_name(n.target) not in self.ignored]

    def supported(self) -> Dict[str, int]:
        counts: Dict[str, int] = {}
        for n, e in self.counted():
            if e is None:
                counts[operator_name(n.target)] = counts.get(operator_name(n.target), 0) + 1
        return counts

    def unsupported(self) -> List[Tuple[torch.fx.Node, UnsupportedOperatorError]]:
        return [(n, e) for n, e in self.counted() if e is not None]

    def report(self) -> Dict[str, Any]:
        """torch_neuronx.analyze's report (docs/torch.md)."""
        return {
            "torch_neuronx_version": __version__,
            "neuronx_cc_version": __version__,
            "support_percentage": f"{self.support_fraction() * 100:.2f}%",
            "supported_operators": self.supported(),
            "unsupported_operators": [
                {"kind": operator_name(n.target), "failureAt": "Lowering to the neuron IR",
                 "reason": e.reason or "no lowering of the operator to the neuron IR",
                 "call": _call_stack(n), "opGraph": _op_graph(n)}
                for n, e in self.unsupported()],
        }

    def support_fraction(self) -> float:
        counted = self.counted()
        if not counted:
            return 1.0
        return sum(1 for _, e in counted if e is None) / len(counted)


def analyze_graph(captured: Captured, to_cpu: frozenset = frozenset(),
                  ignored: Optional[Set[str]] = None, scalar_results: bool = False) -> Analysis:
    """@p scalar_results: 0-dimensional values are the IR's [1] (see
    lowering.lower), which the caller's program calls view back."""
    placement, folded = classify(captured, to_cpu, scalar_results)
    return Analysis(captured, placement, folded, set(ignored or ()), scalar_results)


@dataclass
class Subgraph:
    """A run of device operators between CPU operators, with the getitem
    nodes that pick their results."""
    members: List[torch.fx.Node]
    closure: Set[torch.fx.Node] = field(default_factory=set)
    outputs: List[torch.fx.Node] = field(default_factory=list)


def _folded_in_rebuilt_graph(captured: Captured, placement: Placement,
                             folded: Set[torch.fx.Node]) -> Set[torch.fx.Node]:
    """The folded operators whose values the rebuilt graph needs: used by
    an operator the device does not run, by the graph's output, or by
    another of these. The others are constants of the programs using
    them only."""
    needed: Set[torch.fx.Node] = set()
    for n in reversed(list(captured.gm.graph.nodes)):
        if n in folded and any(u in needed or u not in folded and placement.get(u) is not None
                               or not is_operator(u) for u in n.users):
            needed.add(n)
    return needed


def _subgraphs(captured: Captured, placement: Placement, folded: Set[torch.fx.Node]
               ) -> List[Subgraph]:
    subgraphs: List[Subgraph] = []
    current: List[torch.fx.Node] = []
    rebuilt = _folded_in_rebuilt_graph(captured, placement, folded)
    for n in captured.gm.graph.nodes:
        if n in rebuilt and current and any(a in current for a in n.all_input_nodes):
            # a folded operator of a run's value (zeros_like(softmax)) that
            # the rebuilt graph computes comes after the run computing its
            # operand
            subgraphs.append(Subgraph(current))
            current = []
        if not is_operator(n) or n in folded:
            continue
        if placement[n] is None:
            current.append(n)
        elif current:
            subgraphs.append(Subgraph(current))
            current = []
    if current:
        subgraphs.append(Subgraph(current))
    for s in subgraphs:
        s.closure = set(s.members)
        for m in s.members:
            s.closure.update(u for u in m.users
                             if u.op == "call_function" and u.target is operator.getitem)
        for n in captured.gm.graph.nodes:
            # (a folded operator the rebuilt graph does not compute uses
            # nothing there)
            if n in s.closure and isinstance(captured.values.get(n), torch.Tensor) and \
                    any(u not in s.closure and (u in rebuilt or u not in folded)
                        for u in n.users):
                s.outputs.append(n)
    # A run whose values nothing outside it uses is dead code.
    return [s for s in subgraphs if s.outputs]


def lower_subgraphs(captured: Captured, analysis: Analysis, to_cpu: Set[str], prefix: str
                    ) -> Tuple[List[Subgraph], List[Tuple[Lowered, List[External]]]]:
    """The runs of device operators of @p analysis, each lowered as the IR
    graph <prefix><i>, with what its inputs are. An operator that lowers
    with its inputs from wherever they come may still not be lowerable once
    its neighbours are placed (an input the CPU computes in a form the
    device does not take): it then joins the CPU's part (@p to_cpu and
    @p analysis are updated), and the subgraphs are formed again."""
    while True:
        subgraphs = _subgraphs(captured, analysis.placement, analysis.folded)
        parts = []
        try:
            for i, s in enumerate(subgraphs):
                parts.append(lower_part(captured, f"{prefix}{i}", frozenset(s.members),
                                        s.outputs, analysis.scalar_results))
            return subgraphs, parts
        except UnsupportedOperatorError as e:
            if e.node_name is None or e.node_name in to_cpu:
                raise
            to_cpu.add(e.node_name)
            analysis.placement, analysis.folded = classify(captured, frozenset(to_cpu),
                                                           analysis.scalar_results)


def _describe(n: torch.fx.Node, e: UnsupportedOperatorError) -> str:
    return f"{operator_name(n.target)} at {call_site(n)}{' (' + e.reason + ')' if e.reason else ''}"


def _attribute_name(name: str) -> str:
    return "c_" + re.sub(r"[^A-Za-z0-9_]", "_", name)


def partition(captured: Captured, config: PartitionerConfig,
              compiler_workdir: Optional[Union[str, Path]],
              compiler_args: List[str]) -> torch.jit.ScriptModule:
    """The captured model with each device subgraph a program call, scripted."""
    name = captured.name
    tk = config.trace_kwargs or {}
    workdir = tk.get("compiler_workdir", compiler_workdir)
    if "compiler_args" in tk:
        ca = tk["compiler_args"]
        compiler_args = [ca] if isinstance(ca, str) else list(ca or [])
    ap = config.analyze_parameters or {}
    to_cpu = set(config.ops_to_partition or ())
    analysis = analyze_graph(captured, frozenset(to_cpu), ap.get("additional_ignored_ops"))

    subgraphs, parts = lower_subgraphs(captured, analysis, to_cpu, f"{name}_neuron")

    if ap.get("compiler_workdir") is not None:
        d = Path(ap["compiler_workdir"])
        d.mkdir(parents=True, exist_ok=True)
        (d / "analyze.json").write_text(json.dumps(analysis.report(), indent=4) + "\n")
    fraction = analysis.support_fraction()
    unsupported = analysis.unsupported()
    if fraction < config.model_support_percentage_threshold:
        raise ValueError(
            f"torch_neuronx.trace: {fraction:.2%} of the operators of {name} run on the "
            f"neuron device, below model_support_percentage_threshold "
            f"({config.model_support_percentage_threshold:.2%}); on the CPU: "
            + "; ".join(_describe(n, e) for n, e in unsupported))
    if config.max_subgraph_count != -1 and len(subgraphs) > config.max_subgraph_count:
        raise ValueError(f"torch_neuronx.trace: {name} partitions into {len(subgraphs)} "
                         f"device subgraphs, more than max_subgraph_count "
                         f"({config.max_subgraph_count})")
    for i, s in enumerate(subgraphs):
        if config.min_subgraph_size != -1 and len(s.members) < config.min_subgraph_size:
            raise ValueError(f"torch_neuronx.trace: device subgraph {i} of {name} has "
                             f"{len(s.members)} operator(s), fewer than min_subgraph_size "
                             f"({config.min_subgraph_size}); it starts with "
                             f"{operator_name(s.members[0].target)} at "
                             f"{call_site(s.members[0])}")

    root = torch.nn.Module()
    log: List[str] = []
    models = []
    for i, (s, (lowered, _)) in enumerate(zip(subgraphs, parts)):
        sub_dir = None if workdir is None else Path(workdir) / f"subgraph{i}"
        models.append(compile_lowered(lowered, sub_dir, compiler_args, str(captured.gm.graph)))
        setattr(root, f"neuron_subgraph{i}", models[-1])
        log.append(f"subgraph {i}: {len(s.members)} operators "
                   f"({operator_name(s.members[0].target)} at {call_site(s.members[0])} to "
                   f"{operator_name(s.members[-1].target)} at {call_site(s.members[-1])}), "
                   f"{len(lowered.inputs)} inputs, {len(s.outputs)} outputs")

    def call(graph: torch.fx.Graph, i: int, args: List[torch.fx.Node]) -> torch.fx.Node:
        return graph.call_function(torch.ops.neuron.forward_v2,
                                   (args, graph.get_attr(f"neuron_subgraph{i}")))

    def constant(n: torch.fx.Node, target: str) -> str:
        attr = _attribute_name(target)
        root.register_buffer(attr, captured.values[n].detach())
        return attr
    graph = partitioned_graph(captured, subgraphs, [p[1] for p in parts], call, constant,
                              scripted=True)
    module = script(torch.fx.GraphModule(root, graph, class_name=name))
    if workdir is not None:
        Path(workdir).mkdir(parents=True, exist_ok=True)
        (Path(workdir) / "graph.txt").write_text(str(captured.gm.graph))
        log += [f"cpu: {_describe(n, e)}" for n, e in analysis.placement.items() if e is not None]
        (Path(workdir) / "partition.log").write_text("\n".join(log) + "\n")
        (Path(workdir) / "partitioned_graph.txt").write_text(str(module.graph))
    cpu_ops = [(n, e) for n, e in analysis.placement.items() if e is not None]
    if cpu_ops:
        warnings.warn(PartitionWarning(
            f"torch_neuronx.trace: {len(cpu_ops)} operator(s) of {name} run on the CPU, "
            f"the other {len(analysis.placement) - len(cpu_ops)} on the neuron device in "
            f"{len(subgraphs)} subgraph(s): "
            + "; ".join(_describe(n, e) for n, e in cpu_ops)), stacklevel=3)
    return module


def partitioned_graph(captured: Captured, subgraphs: List[Subgraph],
                      externals: List[List[External]],
                      call: Callable[[torch.fx.Graph, int, List[torch.fx.Node]], torch.fx.Node],
                      constant: Callable[[torch.fx.Node, str], str],
                      root: Optional[torch.nn.Module] = None,
                      scripted: bool = False,
                      precomputed: Callable[[torch.fx.Node], Optional[str]] = lambda n: None
                      ) -> torch.fx.Graph:
    """The captured graph with each subgraph's nodes replaced by
    @p call(graph, i, its inputs), whose result is the tuple of its
    outputs; the parameters, buffers and get_attr nodes are attributes
    named by @p constant(node, name). @p scripted: for TorchScript, which
    resolves an operator by its name and the arguments, not an overload's
    attribute. @p root: the module that will own the graph, for graphs
    that call its submodules (FX checks their purity by it).
    @p precomputed(node): the attribute holding an operator's value,
    which the graph then copies instead of computing it, or None."""
    graph = torch.fx.Graph(owning_module=root)
    env: Dict[torch.fx.Node, torch.fx.Node] = {}
    last = {s.members[-1]: i for i, s in enumerate(subgraphs)}
    inside = set().union(*(s.closure for s in subgraphs)) if subgraphs else set()
    constants = {**captured.parameters, **captured.buffers}
    picks = {(n.args[0], n.args[1]): n for n in captured.gm.graph.nodes
             if n.op == "call_function" and n.target is operator.getitem}
    for n in captured.gm.graph.nodes:
        if n in constants:
            env[n] = graph.get_attr(constant(n, constants[n]))
        elif n.op == "get_attr":
            env[n] = graph.get_attr(constant(n, str(n.target)))
        elif n in last:
            i = last[n]
            s = subgraphs[i]
            args = []
            for e in externals[i]:
                pick = picks.get((e.source, e.index))
                if e.index is None:
                    args.append(env[e.source])
                elif pick in env:  # a result another subgraph returns
                    args.append(env[pick])
                else:
                    args.append(graph.call_function(operator.getitem, (env[e.source], e.index)))
            result = call(graph, i, args)
            for k, out in enumerate(s.outputs):
                env[out] = graph.call_function(operator.getitem, (result, k))
        elif n.op == "output":
            # make_fx returns a list of the results: the model's own form
            outs = torch.fx.map_arg(n.args[0], lambda a: env[a])
            graph.output(tuple(outs) if captured.tuple_output else outs[0])
        elif n not in inside and (attr := precomputed(n)) is not None:
            # a copy: nothing the graph returns aliases the attribute
            env[n] = graph.call_function(torch.ops.aten.clone.default, (graph.get_attr(attr),))
        elif n not in inside and all(a in env for a in n.all_input_nodes):
            # (an operand a program does not return: a folded operator
            # only the programs use, which the rebuilt graph does not need)
            env[n] = graph.node_copy(n, lambda a: env[a])
            if scripted and isinstance(n.target, torch._ops.OpOverload):
                env[n].target = n.target.overloadpacket
    graph.eliminate_dead_code()
    graph.lint()
    return graph
