# SPDX-License-Identifier: MIT
"""Broadcasts the device does not do itself: it broadcasts one operand of a
binary operator against the other's shape, so when both are broadcast one
is made a tensor of the result's shape first."""

from __future__ import annotations

from typing import Any, Tuple

from ..context import Context
from ..values import Tensor


def one_sided(L: Context, x: Any, y: Any) -> Tuple[Any, Any]:
    """@p x and @p y with at most one of them broadcast to the node's result."""
    out = L.out_shape()
    if isinstance(x, Tensor) and isinstance(y, Tensor) and x.shape != out and y.shape != out:
        x = materialised(L, x, out)
    return x, y


# The broadcasts made as concatenations (each copy is a data movement the
# program runs; a larger broadcast of both operands runs on the CPU): at
# most this many copies of a piece in one concatenation, which is repeated
# (of the grown piece) for longer axes.
_MAX_BROADCAST_COPIES = 256
_MAX_BROADCAST_ELEMENTS = 1 << 22


def materialised(L: Context, x: Tensor, shape: Tuple[int, ...]) -> Tensor:
    """@p x broadcast to @p shape as a tensor of its own: reshaped to its
    rank, each axis of 1 concatenated as many times as @p shape has."""
    elements = 1
    for n in shape:
        elements *= n
    if elements > _MAX_BROADCAST_ELEMENTS:
        raise L.unsupported(f"both operands broadcast to {list(shape)} (the device broadcasts "
                            f"one operand; the other is copied out to at most "
                            f"{_MAX_BROADCAST_ELEMENTS} elements)")
    if len(x.shape) < len(shape):
        x = L.emit("reshape", [x], result=False,
                   shape=(1,) * (len(shape) - len(x.shape)) + x.shape,
                   dims=[1] * (len(shape) - len(x.shape)) + list(x.shape))
    for axis, want in enumerate(shape):
        while x.shape[axis] < want:
            copies = min(_MAX_BROADCAST_COPIES, -(-want // x.shape[axis]))
            grown = x.shape[:axis] + (x.shape[axis] * copies,) + x.shape[axis + 1:]
            x = L.emit("concat", [x] * copies, result=False, shape=grown, axis=axis)
        if x.shape[axis] > want:
            x = L.emit("slice", [x], result=False, shape=x.shape[:axis] + (want,)
                       + x.shape[axis + 1:], axis=axis, start=0, end=want)
    return x
