# SPDX-License-Identifier: MIT
"""torch_neuronx.analyze: which operators of a model the neuron device runs,
in the report torch-neuronx returns (docs/torch.md)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable, Dict, Optional, Set, Union

import torch

from ._version import __version__
from .lowering import call_stack
from .partition import analyze_graph
from .trace import ExampleInputs, capture


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


def analyze(func: Union[torch.nn.Module, Callable[..., Any]], example_inputs: ExampleInputs, *,
            compiler_workdir: Optional[Union[str, Path]] = None,
            additional_ignored_ops: Optional[Set[str]] = None,
            max_workers: int = 4, is_hf_transformers: bool = False,
            cleanup: bool = False) -> Dict[str, Any]:
    """The operators of @p func traced with @p example_inputs the neuron
    device runs (by aten name, with counts) and those it does not (each with
    why, its call stack and its graph), and the percentage it runs, as
    torch_neuronx.analyze reports them. Nothing is compiled or run on a
    device: the lowering decides (max_workers, is_hf_transformers and
    cleanup are torch-neuronx's knobs for its compiler processes, which this
    analysis does not start). additional_ignored_ops: aten operators left
    out of the report. compiler_workdir: keeps graph.txt (the frozen graph)
    and analyze.json (the report)."""
    del max_workers, is_hf_transformers, cleanup  # no compiler processes here
    frozen, inputs = capture(func, example_inputs, api="torch_neuronx.analyze")
    analysis = analyze_graph(frozen.graph, inputs, ignored=additional_ignored_ops)
    report: Dict[str, Any] = {
        "torch_neuronx_version": __version__,
        "neuronx_cc_version": __version__,
        "support_percentage": f"{analysis.support_fraction() * 100:.2f}%",
        "supported_operators": analysis.supported(),
        "unsupported_operators": [
            {"kind": n.kind(), "failureAt": "Lowering to the neuron IR", "reason": e.reason or "no lowering of the operator to the neuron IR",
             "call": call_stack(n), "opGraph": _op_graph(n)}
            for n, e in analysis.unsupported()],
    }
    if compiler_workdir is not None:
        wd = Path(compiler_workdir)
        wd.mkdir(parents=True, exist_ok=True)
        (wd / "graph.txt").write_text(str(frozen.graph))
        (wd / "analyze.json").write_text(json.dumps(report, indent=4) + "\n")
    return report
