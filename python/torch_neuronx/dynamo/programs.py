# SPDX-License-Identifier: MIT
"""The device programs of torch.compile's graphs: a lowered part of a
graph compiled once (kept in memory, and on disk under the cache's
"graphs" directory, named by a hash of its IR, its constants and the
compiler's version: torch_neuronx.cache), and run on `neuron` tensors in
the current stream's order as an eager kernel is."""

from __future__ import annotations

import hashlib
import re
import threading
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

import torch

from .. import cache
from ..lowering import BOOL_INPUT_DTYPE, Lowered


@dataclass
class Statistics:
    """What this process did for torch.compile's programs."""
    compiled: int = 0  # programs compiled (not found in memory or on disk)
    loaded: int = 0  # programs read from the disk cache
    compile_seconds: float = 0.0  # the time the compiles took
    graphs: int = 0  # FX graphs (forward, backward, inference) compiled
    graph_seconds: float = 0.0  # the time those took: values, lowering, programs


statistics = Statistics()
_runs: Counter = Counter()
_runs_lock = threading.Lock()  # protects _runs
_lock = threading.Lock()  # protects _memory and statistics: one compile at a time
_memory: Dict[str, Any] = {}  # key -> torch.classes.neuron.EagerKernel


def get_compiled_programs() -> Dict[str, int]:
    """The device programs of torch.compile's graphs that ran, by name
    ("forward0_program0": graph 0's forward, its first program), with how
    many times each did."""
    with _runs_lock:
        return dict(sorted(_runs.items()))


# A value's name in the IR's text form ("mul_3: fp32[8, 32] = mul(...)",
# "input primals_1: fp32[32, 16]"), and any identifier.
_DEFINED = re.compile(r"([A-Za-z_][A-Za-z0-9_]*): ")
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _key(lowered: Lowered) -> str:
    """What the program's bytes depend on besides the compiler: its IR
    with the graph's and the values' names replaced by their order of
    definition (the same computation traced again, or by another
    process, is the same program: its inputs and outputs keep their
    order), and the constants' values."""
    lines = lowered.graph.text().splitlines()[1:]  # without "graph <name>"
    names: Dict[str, str] = {}
    for line in lines:
        for m in _DEFINED.finditer(line):
            names.setdefault(m.group(1), f"%{len(names)}")

    def canonical(text: str) -> str:
        return _IDENTIFIER.sub(lambda m: names.get(m.group(0), m.group(0)), text)
    h = hashlib.sha256()
    h.update("\n".join(canonical(line) for line in lines).encode())
    h.update(repr([[canonical(n) for n in names_] for names_ in
                   (lowered.inputs, lowered.outputs, lowered.weight_names)]).encode())
    for w in lowered.weights:
        h.update(repr((w.dtype, tuple(w.shape))).encode())
        h.update(w.contiguous().view(torch.uint8).numpy().tobytes() if w.numel() else b"")
    return h.hexdigest()[:32]


def _file(key: str) -> Optional[Path]:
    d = cache.directory("graphs")
    return None if d is None else d / f"{key}{cache.SUFFIX}"


def kernel_of(lowered: Lowered) -> Any:
    """The torch.classes.neuron.EagerKernel of @p lowered: from memory,
    the disk, or compiled now (and stored)."""
    key = _key(lowered)
    with _lock:
        kernel = _memory.get(key)
        if kernel is not None:
            return kernel
        path = _file(key)
        if path is not None and path.is_file():
            saved = cache.load(path)
            if saved is not None:
                statistics.loaded += 1
                _memory[key] = saved["kernel"]
                return saved["kernel"]
        started = time.perf_counter()
        model = torch.ops.neuron.compile_graph(lowered.graph, lowered.weight_names,
                                               lowered.weights, lowered.inputs, lowered.outputs,
                                               "", [])
        kernel = torch.ops.neuron.eager_kernel(model)
        statistics.compile_seconds += time.perf_counter() - started
        statistics.compiled += 1
        if path is not None:
            cache.store(path, kernel)
        _memory[key] = kernel
        return kernel


class Program(torch.nn.Module):
    """One device program of a graph, as a module of the graph that calls
    it: takes the part's inputs, returns the tuple of its outputs. The
    compiler's values have at least one dimension: a 0-dimensional input
    is passed as [1] and a 0-dimensional output viewed back; a bool input
    reaches it as BOOL_INPUT_DTYPE's 0 and 1."""

    def __init__(self, kernel: Any, name: str, shapes: Sequence[Tuple[int, ...]]) -> None:
        super().__init__()
        self.kernel = kernel
        self.program_name = name
        got = [tuple(m.shape) for m in kernel.output_meta()]
        # the outputs' shapes where the program's differ (0-dimensional ones)
        self.shapes: Optional[List[Tuple[int, ...]]] = (
            None if got == [tuple(s) for s in shapes] else [tuple(s) for s in shapes])

    def forward(self, *inputs: torch.Tensor) -> Tuple[torch.Tensor, ...]:
        device = next((t.device for t in inputs if t.device.type == "neuron"), None)
        args = []
        for t in inputs:
            if t.dtype == torch.bool:
                t = t.to(BOOL_INPUT_DTYPE)
            if device is not None and t.device != device:
                t = t.to(device)  # a CPU scalar mixed with device tensors
            args.append(t.reshape(1) if t.dim() == 0 else t.contiguous())
        outputs = self.kernel.run(args)
        with _runs_lock:
            _runs[self.program_name] += 1
        if self.shapes is not None:
            outputs = [o.view(s) for o, s in zip(outputs, self.shapes)]
        return tuple(outputs)
