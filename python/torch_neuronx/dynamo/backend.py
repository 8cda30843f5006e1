# SPDX-License-Identifier: MIT
"""torch.compile's backend "neuron": Dynamo's graph through AOTAutograd
(PyTorch's core ATen decompositions, but for the operators the lowering
takes whole), whose forward and backward graphs are each compiled into
device programs and eager operators (graph.py). Dynamo's guards recompile
for new shapes; a graph Dynamo gives with dynamic shapes is compiled for
each set of shapes it is called with."""

from __future__ import annotations

import functools
import logging
from typing import Any, Callable, Dict, Sequence, Tuple

import torch
from torch.fx.experimental.proxy_tensor import make_fx

from ..capture import decompositions
from ..lowering import LOWERINGS
from . import _torch
from ..foreach import foreach_decompositions
from .graph import compile_graph, static_shapes

log = logging.getLogger("torch_neuronx")

NAME = "neuron"

# Operators kept whole although the programs do not run them: their
# operands include int64 indices (class targets, embedding ids), which
# the programs do not take, so their decompositions' operators on them
# (gather, scatter, ne, where, sum; embedding's backward: bounds checks,
# clamp, index_put) would each fall back to the CPU, with copies both
# ways; whole, each runs eagerly as one operator (embedding's backward on
# the device, rng.py; the others on the CPU: logged, counted).
_EAGER_WHOLE = frozenset({torch.ops.aten.nll_loss_forward.default,
                          torch.ops.aten.nll_loss_backward.default,
                          torch.ops.aten.nll_loss2d_forward.default,
                          torch.ops.aten.nll_loss2d_backward.default,
                          torch.ops.aten.embedding_dense_backward.default})


class _PerShape:
    """A graph with dynamic shapes, compiled for the static shapes of each
    call (traced again with them, so that every size is a number)."""

    def __init__(self, gm: torch.fx.GraphModule, kind: str) -> None:
        self.gm = gm
        self.kind = kind
        self.compiled: Dict[Tuple[Any, ...], Callable[..., Any]] = {}

    def __call__(self, *args: Any) -> Any:
        key = tuple((tuple(a.shape), a.dtype, a.device) if isinstance(a, torch.Tensor) else a
                    for a in args)
        fn = self.compiled.get(key)
        if fn is None:
            static = make_fx(self.gm, tracing_mode="fake")(*args)
            fn = _compiled_or_eager(static, args, self.kind)
            self.compiled[key] = fn
        return fn(*args)


def _compiled_or_eager(gm: torch.fx.GraphModule, example_inputs: Sequence[Any],
                       kind: str) -> Callable[..., Any]:
    """@p gm compiled for the device; a graph the partitioner fails on runs
    as it is, operator by operator on the device, with a warning."""
    try:
        return compile_graph(gm, example_inputs, kind)
    except Exception as e:  # noqa: BLE001 - the graph still runs, eagerly
        log.warning("neuron: torch.compile: the %s graph runs eagerly: %s: %s", kind,
                    type(e).__name__, str(e).splitlines()[0] if str(e) else "")
        return gm


def _on_the_device(example_inputs: Sequence[Any]) -> bool:
    """Whether the graph computes on `neuron` tensors (a graph of CPU
    tensors runs as it is, where they are)."""
    return any(isinstance(x, torch.Tensor) and x.device.type == "neuron" for x in example_inputs)


def _compiler(kind: str) -> Callable[..., Any]:
    def compile_fx(gm: torch.fx.GraphModule, example_inputs: Sequence[Any]) -> Callable[..., Any]:
        if not _on_the_device(example_inputs):
            log.info("neuron: torch.compile: the %s graph has no neuron tensor input: it runs "
                     "as it is", kind)
            fn: Callable[..., Any] = gm
        elif not static_shapes(example_inputs):
            fn = _PerShape(gm, kind)
        else:
            fn = _compiled_or_eager(gm, example_inputs, kind)
        return _torch.boxed(fn)
    compile_fx.__name__ = f"neuron_{kind}_compiler"
    return compile_fx


@functools.lru_cache(maxsize=None)
def _aot_backend() -> Callable[..., Any]:
    return _torch.aot_autograd(fw_compiler=_compiler("forward"),
                               bw_compiler=_compiler("backward"),
                               inference_compiler=_compiler("inference"),
                               decompositions={**decompositions(set(LOWERINGS) | _EAGER_WHOLE),
                                               **foreach_decompositions()})


def neuron(gm: torch.fx.GraphModule, example_inputs: Sequence[Any], **kwargs: Any) -> Any:
    """The backend: torch.compile(model, backend="neuron")."""
    return _aot_backend()(gm, example_inputs, **kwargs)


def register() -> None:
    """Makes "neuron" a name torch.compile knows when no installed
    distribution declares it (the build tree's package without its
    dist-info, a copy on PYTHONPATH): Dynamo looks backends up in the
    `torch_dynamo_backends` entry point group, which the wheel declares."""
    if not _torch.backend_entry_point(NAME):
        _torch.register_backend(neuron, NAME)
