# SPDX-License-Identifier: MIT
"""torch_neuronx.analyze: which operators of a model the neuron device runs,
in the report torch-neuronx returns (docs/torch.md)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable, Dict, Optional, Set, Union

import torch

from .capture import ExampleInputs, capture
from .lowering import LOWERINGS
from .partition import analyze_graph


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
    captured = capture(func, example_inputs, LOWERINGS, api="torch_neuronx.analyze")
    analysis = analyze_graph(captured, ignored=additional_ignored_ops)
    report = analysis.report()
    if compiler_workdir is not None:
        wd = Path(compiler_workdir)
        wd.mkdir(parents=True, exist_ok=True)
        (wd / "graph.txt").write_text(str(captured.gm.graph))
        (wd / "analyze.json").write_text(json.dumps(report, indent=4) + "\n")
    return report
