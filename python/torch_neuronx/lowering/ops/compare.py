# SPDX-License-Identifier: MIT
"""Comparisons (bool results: the device's u8 masks) and where with a
condition computed on the device."""

from __future__ import annotations

import math
from typing import Any

import torch

from ..context import Context
from ..registry import CAST_DTYPES, FLOATS_AND_INT32, lowering
from ..values import Masked, Tensor, Weight
from .broadcast import materialised, one_sided
from .masks import causal_keep

aten = torch.ops.aten


def _cast(L: Context, t: Tensor, dtype: torch.dtype) -> Tensor:
    if t.dtype == dtype:
        return t
    if dtype not in CAST_DTYPES:
        raise L.unsupported(f"a comparison in {dtype}")
    return L.emit("cast", [t], result=False, shape=t.shape,
                  flags=[f"dtype={CAST_DTYPES[dtype]}"], dtype=dtype)


# The comparison that holds for (y, x) when op holds for (x, y).
_MIRRORED = {"eq": "eq", "ne": "ne", "lt": "gt", "le": "ge", "gt": "lt", "ge": "le"}


def _masked_positions(L: Context, scores: Masked, other: Any) -> None:
    """scores == -inf for causally masked scores, which the decomposition
    of scaled_dot_product_attention computes to find the rows whose keys
    are all masked (their softmax is then 0, not NaN). For finite scores
    that is a constant: where the mask's fill is -inf, the masked keys;
    where it is finite, nowhere. It is taken from the traced run and
    folds what uses it (every row keeps its key 0, so none is all
    masked)."""
    if other != -math.inf:
        raise L.unsupported(f"a comparison of causally masked scores with {other!r} (the "
                            "device applies causal masks in softmax only)")
    traced = L.value(L.node)
    shape = scores.scores.shape
    if tuple(traced.shape) != shape or (traced.any() and not causal_keep(shape, ~traced)):
        raise L.unsupported("causally masked scores that are -inf where the mask keeps them")
    L.bind(Weight(traced, L.node.name))


def _compare(op: str):  # type: ignore[no-untyped-def]
    def lower(L: Context, node: torch.fx.Node) -> None:
        if op == "eq" and isinstance(L.arg(0), Masked):
            _masked_positions(L, L.arg(0), L.arg(1))
            return
        x, y = L.operand(L.arg(0), "self"), L.operand(L.arg(1), "other")
        name = op
        if not isinstance(x, Tensor):
            # a number against a tensor (decompositions make them, e.g.
            # lerp's `weight >= 0.5` with a number weight): the tensor first
            if not isinstance(y, Tensor):
                raise L.unsupported("a comparison of two numbers")
            x, y, name = y, x, _MIRRORED[op]
        if isinstance(y, Tensor) and y.dtype != x.dtype:
            # compared in the promoted dtype, as torch compares
            common = torch.promote_types(x.dtype, y.dtype)
            x, y = (_cast(L, t, common) for t in (x, y))
        x, y = one_sided(L, x, y)
        L.bind(L.emit(name, [x, y], dtype=torch.bool))
    lower.__name__ = op
    return lower


for _op in ("eq", "ne", "lt", "le", "gt", "ge"):
    lowering(getattr(aten, _op).Tensor, getattr(aten, _op).Scalar,
             dtypes=FLOATS_AND_INT32)(_compare(_op))


def is_device_mask(L: Context, v: Any) -> bool:
    """Whether @p v is a mask the device holds as u8: a comparison's
    result, or a bool input of an eager kernel (Context.bool_inputs_u8)."""
    return isinstance(v, Tensor) and v.dtype == torch.bool and L.graph.dtype(v.node) == "u8"


def general_where(L: Context, cond: Any, a: Any, b: Any) -> None:
    """where(cond, a, b) with a condition the device holds (is_device_mask):
    a where cond holds, else b; a and b tensors or numbers (not both), each
    broadcast to the result's shape."""
    out = L.out_shape()
    c = L.tensor(cond, "condition")
    if c.shape != out:
        c = materialised(L, c, out)
    x, y = L.operand(a, "self"), L.operand(b, "other")
    if not isinstance(x, Tensor):
        if not isinstance(y, Tensor):
            raise L.unsupported("a select of two numbers")
        # the number is the false value: cond negated (as 0 and 1, == 0)
        ones = L.emit("cast", [c], result=False, shape=out, dtype=torch.float32,
                      flags=["dtype=fp32"])
        c = L.emit("eq", [ones, 0.0], result=False, shape=out, dtype=torch.bool)
        x, y = y, x
    if x.shape != out:
        x = materialised(L, x, out)
    if isinstance(y, Tensor):
        if y.dtype != x.dtype:
            raise L.unsupported(f"where of {x.dtype} and {y.dtype}")
        if y.shape != out:
            y = materialised(L, y, out)
    L.bind(L.emit("where", [c, x, y], dtype=x.dtype))
