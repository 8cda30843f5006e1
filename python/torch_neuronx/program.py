# SPDX-License-Identifier: MIT
"""A lowered graph made a device program (torch.classes.neuron.Model),
and a module made TorchScript, for trace and its partitioner."""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any, List, Optional, Union

import torch

from .lowering import Lowered


def compile_lowered(lowered: Lowered, workdir: Optional[Union[str, Path]],
                    compiler_args: List[str], graph_text: str) -> Any:
    """The torch.classes.neuron.Model of @p lowered; @p workdir keeps the
    captured graph, the lowering's log and the compiler's files."""
    wd = ""
    if workdir is not None:
        path = Path(workdir)
        path.mkdir(parents=True, exist_ok=True)
        (path / "graph.txt").write_text(graph_text)
        (path / "lowering.log").write_text("\n".join(lowered.log) + "\n")
        wd = str(path)
    return torch.ops.neuron.compile_graph(lowered.graph, lowered.weight_names, lowered.weights,
                                          lowered.inputs, lowered.outputs, wd, compiler_args)


def script(module: torch.nn.Module) -> torch.jit.ScriptModule:
    """@p module as TorchScript, which torch.jit.save writes with its
    programs. What scripting warns of (its deprecation in favour of
    torch.export, the annotations of torch's own classes) is not the
    caller's to act on."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return torch.jit.script(module)
