# SPDX-License-Identifier: MIT
"""send and recv of the neuron process group over Gloo's host transport.
A message is a header (dtype, shape, bytes) then the data, on two Gloo
tags derived from the caller's; the receiver checks the header against
its tensor before it receives the data, so a mismatch raises a clear
error on the receiving rank (the data is drained into a scratch buffer)
instead of Gloo terminating the process on a message of the wrong size."""

from __future__ import annotations

import threading
from typing import List, Tuple

import torch
import torch.distributed as dist

from . import _gloo

_MAGIC = 0x6E657572  # "neur"
_MAX_DIMS = 16
_HEADER = 4 + _MAX_DIMS
# The dtypes a header can name, by their index here.
_DTYPES = [torch.float32, torch.bfloat16, torch.float16, torch.float64, torch.int64,
           torch.int32, torch.int16, torch.int8, torch.uint8, torch.bool]


def header_tag(tag: int) -> int:
    return 2 * tag


def data_tag(tag: int) -> int:
    return 2 * tag + 1


def header_of(t: torch.Tensor) -> torch.Tensor:
    if t.dtype not in _DTYPES:
        raise RuntimeError(f"neuron: send/recv of {t.dtype} tensors is not supported")
    if t.dim() > _MAX_DIMS:
        raise RuntimeError(f"neuron: send/recv of a tensor of {t.dim()} dimensions "
                           f"(at most {_MAX_DIMS})")
    h = torch.zeros(_HEADER, dtype=torch.int64)
    h[0] = _MAGIC
    h[1] = _DTYPES.index(t.dtype)
    h[2] = t.dim()
    h[3] = t.numel() * t.element_size()
    for i, s in enumerate(t.shape):
        h[4 + i] = s
    return h


def empty_header() -> torch.Tensor:
    return torch.zeros(_HEADER, dtype=torch.int64)


def describe_header(h: torch.Tensor) -> str:
    dims = [int(x) for x in h[4:4 + int(h[2])]]
    return f"{str(_DTYPES[int(h[1])]).replace('torch.', '')}{dims}"


def header_bytes(h: torch.Tensor) -> int:
    return int(h[3])


def as_bytes(t: torch.Tensor) -> torch.Tensor:
    """A contiguous host tensor's bytes (what Gloo sends)."""
    return t.reshape(-1).view(torch.uint8)


def wait_in_thread(name: str, works: List[dist.Work], held: Tuple[object, ...],
                   done: threading.Event, future: "torch.futures.Future[List[torch.Tensor]]",
                   result: List[torch.Tensor]) -> None:
    """Completes @p future when Gloo's @p works, whose tensors are @p held,
    completed (a send's Work)."""

    def run() -> None:
        try:
            for w in works:
                _gloo.wait(w, held)
        except Exception as error:
            future.set_exception(RuntimeError(f"neuron: {name} failed: {error}"))
        else:
            future.set_result(result)
        done.set()

    threading.Thread(target=run, name=name, daemon=True).start()
