# SPDX-License-Identifier: MIT
"""Softmax and log_softmax over the last axis, layer and group
normalization (with the statistics training saves)."""

from __future__ import annotations

import math
import operator
from typing import Tuple

import torch

from ..context import Context
from ..registry import CAST_DTYPES, lowering
from ..values import Masked, Tensor
from .broadcast import materialised

aten = torch.ops.aten


def _softmax_of(L: Context, dim: int) -> None:
    given = L.arg(0)
    x = given.scores if isinstance(given, Masked) else L.tensor(given, "self")
    if (dim + len(x.shape) if dim < 0 else dim) != len(x.shape) - 1:
        raise L.unsupported("softmax over an axis other than the last")
    L.bind(L.emit("softmax", [x], axis=-1, flags=["causal"] if isinstance(given, Masked) else []))


@lowering(aten._softmax.default)
def softmax(L: Context, node: torch.fx.Node) -> None:
    # (self, dim, half_to_float)
    if L.arg(2):
        raise L.unsupported("softmax of a half tensor into float (half_to_float)")
    _softmax_of(L, L.arg(1))


@lowering(aten._log_softmax.default)
def log_softmax(L: Context, node: torch.fx.Node) -> None:
    # (self, dim, half_to_float)
    if L.arg(2):
        raise L.unsupported("log_softmax of a half tensor into float (half_to_float)")
    x, dim = L.tensor(L.arg(0), "self"), L.arg(1)
    if (dim + len(x.shape) if dim < 0 else dim) != len(x.shape) - 1:
        raise L.unsupported("log_softmax over an axis other than the last")
    if x.dtype == torch.float32:
        L.bind(L.emit("log_softmax", [x], axis=-1))
        return
    # in float32, rounded once, as torch's CPU kernel (x - max - ln(sum)
    # rounded to bfloat16 at each step loses the difference)
    r = L.emit("log_softmax", [_as(L, x, torch.float32)], axis=-1, result=False, shape=x.shape)
    L.bind(_as(L, r, x.dtype))


def _statistics(L: Context, x: Tensor, eps: float, shape: Tuple[int, ...]
                ) -> Tuple[Tensor, Tensor]:
    """The mean and 1 / sqrt(var + eps) of the last axis of @p x (float32),
    reshaped to @p shape, in float32."""
    rows = x.shape[:-1] + (1,)
    n = float(x.shape[-1])
    m = L.emit("mean", [x], result=False, shape=rows, dims=[len(x.shape) - 1],
               flags=["keepdim"])
    c = L.emit("sub", [x, m], result=False, shape=x.shape)
    var = L.emit("sum", [L.emit("mul", [c, c], result=False, shape=x.shape)], result=False,
                 shape=rows, dims=[len(x.shape) - 1], flags=["keepdim"])
    var = L.emit("div", [var, n], result=False, shape=rows)
    rstd = L.emit("rsqrt", [L.emit("add", [var, eps], result=False, shape=rows)],
                  result=False, shape=rows)
    return tuple(L.emit("reshape", [t], result=False, shape=shape, dims=list(shape))
                 if t.shape != shape else t for t in (m, rstd))  # type: ignore[return-value]


def _as(L: Context, t: Tensor, dtype: torch.dtype) -> Tensor:
    if t.dtype == dtype:
        return t
    return L.emit("cast", [t], result=False, shape=t.shape, dtype=dtype,
                  flags=[f"dtype={CAST_DTYPES[dtype]}"])


def _flat(L: Context, t: Tensor, shape: Tuple[int, ...]) -> Tensor:
    return t if t.shape == shape else L.emit("reshape", [t], result=False, shape=shape,
                                             dims=list(shape))


@lowering(aten.native_layer_norm.default)
def layer_norm(L: Context, node: torch.fx.Node) -> None:
    # (input, normalized_shape, weight, bias, eps) -> (out, mean, rstd): the
    # normalized axes flattened into one; the mean and rstd (which autograd
    # saves) in float32 from the input, rounded to its dtype
    x, shape, w, b, eps = (L.tensor(L.arg(0), "input"), L.arg(1), L.arg(2), L.arg(3), L.arg(4))
    k = len(shape)
    if k == 0 or list(shape) != list(x.shape[len(x.shape) - k:]):
        raise L.unsupported(f"normalized_shape {list(shape)} for an input of {list(x.shape)}")
    lead = x.shape[:len(x.shape) - k]
    size = math.prod(shape)
    flat = _flat(L, x, lead + (size,))
    affine = [_flat(L, L.tensor(v, what), (size,)) if v is not None else None
              for v, what in ((w, "weight"), (b, "bias"))]
    read = _statistics_read(node)
    if (w is None) == (b is None) and float(eps) >= 0 and not read:
        # the compiler's layer_norm (its eps is not negative)
        out = L.emit("layer_norm", [flat] + [a for a in affine if a is not None],
                     result=False, shape=flat.shape, eps=float(eps))
        L.bind([_flat(L, out, x.shape), None, None])
        return
    # (x - mean) * rstd, times the weight, plus the bias, in float32
    m, rstd = _statistics(L, _as(L, flat, torch.float32), float(eps), lead + (1,))
    y = L.emit("mul", [L.emit("sub", [_as(L, flat, torch.float32), m], result=False,
                              shape=flat.shape), rstd], result=False, shape=flat.shape)
    for a, op in zip(affine, ("mul", "add")):
        if a is not None:
            y = L.emit(op, [y, _as(L, a, torch.float32)], result=False, shape=flat.shape)
    stats = tuple(L.value(node)[1].shape)
    L.bind([_flat(L, _as(L, y, x.dtype), x.shape), _as(L, _flat(L, m, stats), x.dtype),
            _as(L, _flat(L, rstd, stats), x.dtype)])


def _statistics_read(node: torch.fx.Node) -> bool:
    """Whether the mean or rstd of @p node is read (a traced model reads
    its output alone; training and an eager call read them all)."""
    return any(u.target is not operator.getitem or u.args[1] != 0 for u in node.users)


@lowering(aten.native_group_norm.default)
def group_norm(L: Context, node: torch.fx.Node) -> None:
    # (input, weight, bias, N, C, HxW, group, eps) -> (out, mean, rstd):
    # normalized over [C / group, HxW] per (n, group), then weight and bias
    # per channel
    x, w, b = L.tensor(L.arg(0), "input"), L.arg(1), L.arg(2)
    n, c, hw, g = (int(v) for v in (L.arg(3), L.arg(4), L.arg(5), L.arg(6)))
    eps = float(L.arg(7))
    grouped = _as(L, _flat(L, x, (n, g, (c // g) * hw)), torch.float32)
    m, rstd = _statistics(L, grouped, eps, (n, g, 1))
    y = L.emit("mul", [L.emit("sub", [grouped, m], result=False, shape=grouped.shape), rstd],
               result=False, shape=grouped.shape)
    y = _flat(L, y, (n, c, hw))
    for v, op, what in ((w, "mul", "weight"), (b, "add", "bias")):
        if v is not None:
            # per channel: a column [n, c, 1] (the device broadcasts columns)
            t = materialised(L, _flat(L, _as(L, L.tensor(v, what), torch.float32), (c, 1)),
                             (n, c, 1))
            y = L.emit(op, [y, t], result=False, shape=y.shape)
    out = _flat(L, _as(L, y, x.dtype), x.shape)
    L.bind([out, _as(L, _flat(L, m, (n, g)), x.dtype), _as(L, _flat(L, rstd, (n, g)), x.dtype)])
