# SPDX-License-Identifier: MIT
"""The graph partitioner (torch_neuronx.trace(..., partitioner_config=...)):
the operators the device does not run stay aten nodes of the TorchScript
graph and run on the CPU; each run of device operators between them is
compiled into one program, called through torch.ops.neuron.forward_v2 with
its torch.classes.neuron.Model an attribute of the returned module."""

from __future__ import annotations

import json
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Set, Tuple, Union

import torch

from ._version import __version__
from .lowering import (UnsupportedOperatorError, call_site, call_stack, classify, is_operator,
                       is_tensor_type, lower_part, node_key, probe)

Placement = Dict[str, Tuple[torch._C.Node, Optional[UnsupportedOperatorError]]]

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


def _op_graph(node: torch._C.Node) -> str:
    """@p node alone in a graph whose inputs are its inputs."""
    g = torch._C.Graph()
    mapping: Dict[str, torch._C.Value] = {}
    for v in node.inputs():
        if v.debugName() not in mapping:
            x = g.addInput()
            if not v.debugName().isdigit():  # numbers are the graph's own names
                x.setDebugName(v.debugName())
            x.setType(v.type())
            mapping[v.debugName()] = x
    clone = g.createClone(node, lambda v: mapping[v.debugName()])
    g.appendNode(clone)
    for o in clone.outputs():
        g.registerOutput(o)
    return str(g)


@dataclass
class Analysis:
    """Where each operator of a frozen graph can run."""
    graph: torch._C.Graph
    probed: Dict[str, Any]
    placement: Placement  # in graph order
    ignored: Set[str] = field(default_factory=set)

    def counted(self) -> List[Tuple[torch._C.Node, Optional[UnsupportedOperatorError]]]:
        return [p for p in self.placement.values() if p[0].kind() not in self.ignored]

    def supported(self) -> Dict[str, int]:
        counts: Dict[str, int] = {}
        for n, e in self.counted():
            if e is None:
                counts[n.kind()] = counts.get(n.kind(), 0) + 1
        return counts

    def unsupported(self) -> List[Tuple[torch._C.Node, UnsupportedOperatorError]]:
        return [(n, e) for n, e in self.counted() if e is not None]

    def report(self) -> Dict[str, Any]:
        """torch_neuronx.analyze's report (docs/torch.md)."""
        return {
            "torch_neuronx_version": __version__,
            "neuronx_cc_version": __version__,
            "support_percentage": f"{self.support_fraction() * 100:.2f}%",
            "supported_operators": self.supported(),
            "unsupported_operators": [
                {"kind": n.kind(), "failureAt": "Lowering to the neuron IR",
                 "reason": e.reason or "no lowering of the operator to the neuron IR",
                 "call": call_stack(n), "opGraph": _op_graph(n)}
                for n, e in self.unsupported()],
        }

    def support_fraction(self) -> float:
        counted = self.counted()
        if not counted:
            return 1.0
        return sum(1 for _, e in counted if e is None) / len(counted)


def fold_sizes(graph: torch._C.Graph, probed: Dict[str, Any]) -> None:
    """Replaces every int the graph computes (sizes and arithmetic on them)
    by its value in the example run: shapes are fixed by the trace, and no
    size node then ties the CPU's part of the graph to the device's."""
    for n in list(graph.nodes()):
        outs = list(n.outputs())
        if (n.kind() == "prim::Constant" or not outs
                or not all(isinstance(o.type(), torch._C.IntType) and o.debugName() in probed
                           for o in outs)):
            continue
        for o in outs:
            with graph.insert_point_guard(n):
                c = graph.insertConstant(int(probed[o.debugName()]))
            o.replaceAllUsesWith(c)
    torch._C._jit_pass_dce(graph)


def analyze_graph(graph: torch._C.Graph, inputs: Sequence[torch.Tensor],
                  to_cpu: frozenset = frozenset(), ignored: Optional[Set[str]] = None) -> Analysis:
    probed = probe(graph, inputs)
    fold_sizes(graph, probed)
    return Analysis(graph, probed, classify(graph, inputs, probed, to_cpu), set(ignored or ()))


@dataclass
class _Subgraph:
    """A run of device operators between CPU operators."""
    members: List[torch._C.Node]
    outputs: List[str] = field(default_factory=list)  # debug names of the values it returns
    moved: List[torch._C.Node] = field(default_factory=list)  # glue to move after its call
    absorbed: List[torch._C.Node] = field(default_factory=list)  # glue using its values

    def keys(self) -> frozenset:
        return frozenset(node_key(n) for n in self.members)


def _subgraphs(graph: torch._C.Graph, placement: Placement) -> List[_Subgraph]:
    nodes = list(graph.nodes())
    subgraphs: List[_Subgraph] = []
    current: List[torch._C.Node] = []
    for n in nodes:
        if not is_operator(n):
            continue
        if placement[node_key(n)][1] is None:
            current.append(n)
        elif current:
            subgraphs.append(_Subgraph(current))
            current = []
    if current:
        subgraphs.append(_Subgraph(current))
    position = {id_: i for i, id_ in enumerate(_node_ids(nodes))}
    for s in subgraphs:
        _boundary(s, nodes, position)
    return subgraphs


def _node_ids(nodes: Sequence[torch._C.Node]) -> List[str]:
    # Glue nodes have outputs too (constants, lists): the same key works.
    return [node_key(n) if n.outputsSize() else f"<node {i}>" for i, n in enumerate(nodes)]


def _boundary(s: _Subgraph, nodes: Sequence[torch._C.Node], position: Dict[str, int]) -> None:
    """The values @p s returns and the glue nodes that must follow its call."""
    members = s.keys()
    first, last = position[node_key(s.members[0])], position[node_key(s.members[-1])]
    produced: Set[str] = set()
    absorbed: List[torch._C.Node] = []  # glue nodes using the subgraph's values
    for i, n in enumerate(nodes[first:], first):
        if not n.outputsSize():
            continue
        if node_key(n) in members:
            produced.update(o.debugName() for o in n.outputs())
        elif not is_operator(n) and any(v.debugName() in produced for v in n.inputs()):
            absorbed.append(n)
            produced.update(o.debugName() for o in n.outputs())
    # Glue used only by the subgraph's operators (or such glue) dies with them.
    internal: Set[str] = set()
    for g in reversed(absorbed):
        if all(u.user.outputsSize() and (node_key(u.user) in members or node_key(u.user) in internal)
               for o in g.outputs() for u in o.uses()):
            internal.add(node_key(g))

    def used_outside(v: torch._C.Value) -> bool:
        return any(not u.user.outputsSize() or (node_key(u.user) not in members
                                                and node_key(u.user) not in internal)
                   for u in v.uses())

    for n in s.members + absorbed:
        for o in n.outputs():
            if is_tensor_type(o.type()) and used_outside(o) and o.debugName() not in s.outputs:
                s.outputs.append(o.debugName())
    s.absorbed = absorbed
    s.moved = [g for g in absorbed
               if node_key(g) not in internal and position[node_key(g)] < last]


def _model_type() -> torch._C.JitType:
    """The TorchScript type of torch.classes.neuron.Model."""
    def identity(model: torch.classes.neuron.Model) -> torch.classes.neuron.Model:
        return model
    return list(torch.jit.script(identity).graph.inputs())[0].type()


def _describe(n: torch._C.Node, e: UnsupportedOperatorError) -> str:
    return f"{n.kind()} at {call_site(n)}{' (' + e.reason + ')' if e.reason else ''}"


def partition(name: str, frozen: torch.jit.ScriptModule, inputs: Sequence[torch.Tensor],
              config: PartitionerConfig, compiler_workdir: Optional[Union[str, Path]],
              compiler_args: List[str]) -> torch.jit.ScriptModule:
    """Partitions @p frozen's forward graph in place and returns @p frozen."""
    graph = frozen.graph
    tk = config.trace_kwargs or {}
    workdir = tk.get("compiler_workdir", compiler_workdir)
    if "compiler_args" in tk:
        ca = tk["compiler_args"]
        compiler_args = [ca] if isinstance(ca, str) else list(ca or [])
    ap = config.analyze_parameters or {}
    analysis = analyze_graph(graph, inputs, frozenset(config.ops_to_partition or ()),
                             ap.get("additional_ignored_ops"))

    # An operator that lowers with its inputs from wherever they come may
    # still not be lowerable once its neighbours are placed (an input the
    # CPU computes in a dtype the device lacks): it then joins the CPU's
    # part, and the subgraphs are formed again.
    to_cpu = set(config.ops_to_partition or ())
    while True:
        placement = analysis.placement
        subgraphs = _subgraphs(graph, placement)
        parts = []
        try:
            for i, s in enumerate(subgraphs):
                parts.append(lower_part(f"{name}_neuron{i}", graph, inputs, analysis.probed,
                                        s.keys(), s.outputs))
            break
        except UnsupportedOperatorError as e:
            if e.node_key is None or e.node_key in to_cpu:
                raise
            to_cpu.add(e.node_key)
            analysis.placement = classify(graph, inputs, analysis.probed, frozenset(to_cpu))

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
                             f"{s.members[0].kind()} at {call_site(s.members[0])}")

    if workdir is not None:
        Path(workdir).mkdir(parents=True, exist_ok=True)
        (Path(workdir) / "graph.txt").write_text(str(graph))

    values: Dict[str, torch._C.Value] = {v.debugName(): v for v in graph.inputs()}
    for n in graph.nodes():
        for o in n.outputs():
            values[o.debugName()] = o
    self_value = list(graph.inputs())[0]
    tensors = torch._C.ListType(torch._C.TensorType.get())
    model_type = _model_type()
    log: List[str] = []
    for i, (s, (lowered, input_names)) in enumerate(zip(subgraphs, parts)):
        sub_dir = ""
        if workdir is not None:
            d = Path(workdir) / f"subgraph{i}"
            d.mkdir(parents=True, exist_ok=True)
            (d / "lowering.log").write_text("\n".join(lowered.log) + "\n")
            sub_dir = str(d)
        model = torch.ops.neuron.compile(lowered.ir, lowered.weight_names, lowered.weights,
                                         lowered.inputs, lowered.outputs, sub_dir, compiler_args)
        attr = f"neuron_subgraph{i}"
        frozen._c._register_attribute(attr, model_type, model)
        get = graph.create("prim::GetAttr", [self_value])
        get.s_("name", attr)
        get.output().setType(model_type)
        get.insertAfter(s.members[-1])
        args = graph.create("prim::ListConstruct", [values[n] for n in input_names])
        args.output().setType(tensors)
        args.insertAfter(get)
        call = graph.create("neuron::forward_v2", [args.output(), get.output()])
        call.output().setType(tensors)
        call.insertAfter(args)
        results = graph.create("prim::ListUnpack", [call.output()], len(s.outputs))
        results.insertAfter(call)
        previous = results
        for g in s.moved:
            g.moveAfter(previous)
            previous = g
        for k, debug in enumerate(s.outputs):
            new = results.outputsAt(k)
            new.setType(values[debug].type())
            values[debug].replaceAllUsesWith(new)
            values[debug] = new
        log.append(f"subgraph {i}: {len(s.members)} operators "
                   f"({s.members[0].kind()} at {call_site(s.members[0])} to "
                   f"{s.members[-1].kind()} at {call_site(s.members[-1])}), "
                   f"{len(input_names)} inputs, {len(s.outputs)} outputs")
    # The subgraphs' operators and the glue using their values are dead now
    # (torch's dead code pass keeps the unpacking of a dead list: remove
    # them here, last first).
    removable = {node_key(n) for s in subgraphs for n in s.members + s.absorbed}
    removed = True
    while removed:
        removed = False
        for n in reversed(list(graph.nodes())):
            if (n.outputsSize() and node_key(n) in removable
                    and not any(o.uses() for o in n.outputs())):
                n.destroy()
                removed = True
    torch._C._jit_pass_dce(graph)
    graph.lint()

    cpu = {node_key(n) for n, e in analysis.placement.values() if e is not None}
    for n in graph.nodes():
        if is_operator(n) and n.kind() != "neuron::forward_v2" and node_key(n) not in cpu:
            raise RuntimeError(f"torch_neuronx.trace: partitioning {name}: {n.kind()} at "
                               f"{call_site(n)} was lowered into a device subgraph but its "
                               "result is still needed outside it")
    if workdir is not None:
        log += [f"cpu: {_describe(n, e)}" for n, e in analysis.placement.values() if e is not None]
        (Path(workdir) / "partition.log").write_text("\n".join(log) + "\n")
        (Path(workdir) / "partitioned_graph.txt").write_text(str(graph))
    cpu_ops = [(n, e) for n, e in analysis.placement.values() if e is not None]
    if cpu_ops:
        warnings.warn(PartitionWarning(
            f"torch_neuronx.trace: {len(cpu_ops)} operator(s) of {name} run on the CPU, "
            f"the other {len(analysis.placement) - len(cpu_ops)} on the neuron device in "
            f"{len(subgraphs)} subgraph(s): "
            + "; ".join(_describe(n, e) for n, e in cpu_ops)), stacklevel=3)
    return frozen
