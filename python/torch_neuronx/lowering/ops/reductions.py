# SPDX-License-Identifier: MIT
"""Reductions (sum, mean, amax, amin over any dims, var as mean, sub, mul
and sum) and the backward kernels of softmax and log_softmax: the IR's
reductions and its softmax_backward and log_softmax_backward."""

from __future__ import annotations

from typing import Any, List, Optional, Sequence

import torch

from ..context import Context
from ..registry import lowering
from ..values import Tensor

aten = torch.ops.aten


def _dims(L: Context, x: Tensor, dim: Any) -> List[int]:
    """The reduced axes as the IR takes them: every axis for None or []."""
    if dim is None:
        return []
    dims = [dim] if isinstance(dim, int) else list(dim)
    rank = len(x.shape)
    for d in dims:
        if not -rank <= d < rank:
            raise L.unsupported(f"dim {d} out of range for rank {rank}")
    return [d % rank for d in dims]


def _check_dtype(L: Context, dtype: Optional[torch.dtype], x: Tensor) -> None:
    if dtype is not None and dtype != x.dtype:
        raise L.unsupported(f"dtype={dtype} for a {x.dtype} input (the device does not convert "
                            "dtypes)")


def _reduce(L: Context, op: str, x: Tensor, dims: Sequence[int], keepdim: bool,
            shape: Optional[Sequence[int]] = None) -> Tensor:
    want = tuple(L.out_shape() if shape is None else shape)
    if not want and not L.scalar_results:
        raise L.unsupported("a reduction to a 0-dimensional tensor (the IR's values have "
                            "rank >= 1)")
    return L.emit(op, [x], shape=want or (1,), flags=["keepdim"] if keepdim else [],
                  dims=list(dims))


@lowering(aten.sum.dim_IntList, aten.sum.default, aten.mean.dim, aten.mean.default)
def sum_mean(L: Context, node: torch.fx.Node) -> None:
    # sum.dim_IntList(self, dim, keepdim=False, *, dtype=None); sum.default(self, *, dtype);
    # mean's the same
    x = L.tensor(L.arg(0), "self")
    _check_dtype(L, L.arg(None, "dtype"), x)
    whole = node.target in (aten.sum.default, aten.mean.default)
    dim = None if whole else L.arg(1, "dim")
    op = "sum" if node.target in (aten.sum.dim_IntList, aten.sum.default) else "mean"
    L.bind(_reduce(L, op, x, _dims(L, x, dim), bool(L.arg(2, "keepdim", False))))


@lowering(aten.amax.default, aten.amin.default)
def amax_amin(L: Context, node: torch.fx.Node) -> None:
    # amax(self, dim=[], keepdim=False): [] reduces every axis
    x = L.tensor(L.arg(0), "self")
    op = "amax" if node.target == aten.amax.default else "amin"
    L.bind(_reduce(L, op, x, _dims(L, x, L.arg(1, "dim", [])), bool(L.arg(2, "keepdim", False))))


@lowering(aten.var.correction)
def var(L: Context, node: torch.fx.Node) -> None:
    # var(self, dim=None, *, correction=None, keepdim=False):
    # sum((x - mean(x, dim, keepdim=True))^2, dim) / (N - correction)
    x = L.tensor(L.arg(0), "self")
    dims = _dims(L, x, L.arg(1, "dim"))
    correction = L.arg(None, "correction")
    correction = 1 if correction is None else correction
    n = 1
    for d in dims or range(len(x.shape)):
        n *= x.shape[d]
    if n - correction <= 0:
        raise L.unsupported(f"{n} elements with correction {correction} (a division by "
                            f"{n - correction})")
    kept = [1 if (not dims or d in dims) else s for d, s in enumerate(x.shape)]
    m = _reduce(L, "mean", x, dims, True, shape=kept)
    centred = L.emit("sub", [x, m], shape=x.shape)
    squares = L.emit("mul", [centred, centred], shape=x.shape)
    s = _reduce(L, "sum", squares, dims, bool(L.arg(None, "keepdim", False)))
    L.bind(L.emit("div", [s, float(n - correction)], shape=s.shape))


def _softmax_backward(L: Context, op: str) -> None:
    # (grad_output, output, dim, input_dtype)
    grad, out = L.tensor(L.arg(0), "grad_output"), L.tensor(L.arg(1), "output")
    dim, input_dtype = L.arg(2), L.arg(3)
    if (dim + len(out.shape) if dim < 0 else dim) != len(out.shape) - 1:
        raise L.unsupported(f"{op} over an axis other than the last")
    if input_dtype != grad.dtype:
        raise L.unsupported(f"input_dtype={input_dtype} for a {grad.dtype} gradient (the device "
                            "does not convert dtypes)")
    L.bind(L.emit(op, [grad, out], axis=-1))


@lowering(aten._softmax_backward_data.default)
def softmax_backward(L: Context, node: torch.fx.Node) -> None:
    _softmax_backward(L, "softmax_backward")


@lowering(aten._log_softmax_backward_data.default)
def log_softmax_backward(L: Context, node: torch.fx.Node) -> None:
    _softmax_backward(L, "log_softmax_backward")
