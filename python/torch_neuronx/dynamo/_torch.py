# SPDX-License-Identifier: MIT
"""The parts of torch that torch.compile's backends use and that torch
keeps under private names, in one place: Dynamo's backend registry and
its AOTAutograd wrapper (the route PyTorch's documentation on custom
backends shows), and a way out of the fake-tensor mode a backend is
called in. Imported only when a graph is compiled or the backend is
registered by hand: importing torch._dynamo costs most of a second."""

from __future__ import annotations

import contextlib
from typing import Any, Callable, Iterator


def aot_autograd(**kwargs: Any) -> Callable[..., Any]:
    """A Dynamo backend compiling AOTAutograd's forward and backward graphs
    with kwargs' fw_compiler, bw_compiler and inference_compiler, after
    kwargs' decompositions."""
    from torch._dynamo.backends.common import aot_autograd as make
    return make(**kwargs)


def boxed(fn: Callable[..., Any]) -> Callable[..., Any]:
    """@p fn taking AOTAutograd's boxed arguments (one list, which the
    callee may free as it goes)."""
    from functorch.compile import make_boxed_func
    return make_boxed_func(fn)


def register_backend(fn: Callable[..., Any], name: str) -> None:
    """@p fn as torch.compile's backend @p name, unless one of that name is
    registered already."""
    from torch._dynamo.backends import registry
    if name not in registry._COMPILER_FNS:
        registry.register_backend(compiler_fn=fn, name=name)


def backend_entry_point(name: str) -> bool:
    """Whether an installed distribution declares backend @p name in the
    `torch_dynamo_backends` entry point group, where Dynamo looks it up."""
    from importlib.metadata import entry_points
    return name in entry_points(group="torch_dynamo_backends").names


@contextlib.contextmanager
def real_tensors() -> Iterator[None]:
    """Outside the fake-tensor and other dispatch modes a backend is called
    in: tensors made here are real."""
    from torch.utils._python_dispatch import _disable_current_modes
    with _disable_current_modes():
        yield
