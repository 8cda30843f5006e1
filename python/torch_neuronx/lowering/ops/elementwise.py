# SPDX-License-Identifier: MIT
"""Elementwise operators: arithmetic with tensors or literals (broadcast
over leading axes by the device) and the activations."""

from __future__ import annotations

from typing import Any, Callable, Tuple

import torch

from ..context import Context
from ..registry import FLOATS_AND_INT32, lowering
from ..values import Expanded, Masked, Tensor
from .masks import additive_causal, broadcast_binary

aten = torch.ops.aten


def _scaled(L: Context, v: Any, alpha: Any) -> Any:
    """alpha * v for add's and sub's alpha."""
    if alpha == 1:
        return v
    if isinstance(v, float):
        return v * alpha
    return L.emit("mul", [v, float(alpha)], shape=v.shape)


def _binary(op: str, L: Context, a: Any, b: Any, alpha: Any = 1) -> None:
    if isinstance(a, Expanded) or isinstance(b, Expanded):
        if alpha != 1:
            raise L.unsupported(f"alpha={alpha!r} with an expanded operand")
        broadcast_binary(L, op, a, b)
        return
    x, y = L.operand(a, "self"), L.operand(b, "other")
    if not isinstance(x, Tensor) and not isinstance(y, Tensor):
        raise L.unsupported("arithmetic on numbers alone")
    out = L.out_shape()
    if isinstance(x, Tensor) and isinstance(y, Tensor) and x.shape != out and y.shape != out:
        x = _materialised(L, x, out)  # the device broadcasts one operand only
    L.bind(L.emit(op, [x, _scaled(L, y, alpha)]))


# Copies of an axis a broadcast may take as a concatenation.
_MAX_BROADCAST_COPIES = 256


def _materialised(L: Context, x: Tensor, shape: Tuple[int, ...]) -> Tensor:
    """@p x broadcast to @p shape as a tensor of its own: reshaped to its
    rank, each axis of 1 concatenated as many times as @p shape has."""
    if len(x.shape) < len(shape):
        x = L.emit("reshape", [x], shape=(1,) * (len(shape) - len(x.shape)) + x.shape,
                   dims=[1] * (len(shape) - len(x.shape)) + list(x.shape))
    for axis, (have, want) in enumerate(zip(x.shape, shape)):
        if have == want:
            continue
        if want > _MAX_BROADCAST_COPIES:
            raise L.unsupported(f"both operands broadcast, one along an axis of {want} "
                                f"(the device broadcasts one operand; at most "
                                f"{_MAX_BROADCAST_COPIES} copies of the other are made)")
        grown = x.shape[:axis] + (want,) + x.shape[axis + 1:]
        x = L.emit("concat", [x] * want, shape=grown, axis=axis)
    return x


@lowering(aten.add.Tensor, aten.add.Scalar, dtypes=FLOATS_AND_INT32)
def add(L: Context, node: torch.fx.Node) -> None:
    a, b, alpha = L.arg(0), L.arg(1), L.arg(2, "alpha", 1)
    # scores + a constant additive causal mask (nn.Transformer's
    # generate_square_subsequent_mask): the softmax after it is causal
    for x, m in ((a, b), (b, a)):
        if isinstance(x, Tensor) and alpha == 1 and x.shape == L.out_shape() \
                and additive_causal(L.out_shape(), m):
            L.bind(Masked(x))
            return
    _binary("add", L, a, b, alpha)


@lowering(aten.sub.Tensor, aten.sub.Scalar, dtypes=FLOATS_AND_INT32)
def sub(L: Context, node: torch.fx.Node) -> None:
    _binary("sub", L, L.arg(0), L.arg(1), L.arg(2, "alpha", 1))


@lowering(aten.rsub.Scalar, aten.rsub.Tensor, dtypes=FLOATS_AND_INT32)
def rsub(L: Context, node: torch.fx.Node) -> None:
    # other - alpha * self
    _binary("sub", L, L.arg(1), L.arg(0), L.arg(2, "alpha", 1))


@lowering(aten.mul.Tensor, aten.mul.Scalar, dtypes=FLOATS_AND_INT32)
def mul(L: Context, node: torch.fx.Node) -> None:
    _binary("mul", L, L.arg(0), L.arg(1))


@lowering(aten.div.Tensor, aten.div.Scalar)
def div(L: Context, node: torch.fx.Node) -> None:
    _binary("div", L, L.arg(0), L.arg(1))


@lowering(aten.neg.default)
def neg(L: Context, node: torch.fx.Node) -> None:
    L.bind(L.emit("mul", [L.tensor(L.arg(0), "self"), -1.0]))


def _unary(op: str) -> Callable[[Context, torch.fx.Node], None]:
    def lower(L: Context, node: torch.fx.Node) -> None:
        L.bind(L.emit(op, [L.tensor(L.arg(0), "self")]))
    lower.__name__ = op
    return lower


for _target, _op in ((aten.relu.default, "relu"), (aten.silu.default, "silu"),
                     (aten.sigmoid.default, "sigmoid"), (aten.tanh.default, "tanh"),
                     (aten.exp.default, "exp")):
    lowering(_target)(_unary(_op))


@lowering(aten.gelu.default)
def gelu(L: Context, node: torch.fx.Node) -> None:
    approximate = L.arg(1, "approximate", "none")
    ops = {"none": "gelu", "tanh": "gelu_tanh"}
    if approximate not in ops:
        raise L.unsupported(f"approximate={approximate!r}")
    L.bind(L.emit(ops[approximate], [L.tensor(L.arg(0), "self")]))
