# SPDX-License-Identifier: MIT
"""Attention masks as the device takes them: a causal mask known when the
model is traced (softmax(causal) builds it on the device), an additive
mask broadcast by the operator that adds it, a bool input's mask made
additive. Shared by the lowerings of attention, matmul and elementwise
operators."""

from __future__ import annotations

import math
from typing import Any, Optional, Sequence, Tuple

import torch

from ..context import BOOL_INPUT_DTYPE, Context
from ..values import Expanded, External, Tensor, Transposed, Weight

# A masked score's fill: -inf, or a finite value at most this (HF's GPT-2
# fills with -1e4, others with torch.finfo(dtype).min). torch's softmax
# gives such a score exactly 0, as the device's causal softmax does, as
# long as the row's largest score exceeds fill + 104 (exp underflows to 0
# in fp32 below -103.97).
MASK_FILL_MAX = -1e4

MASK_HINT = ("only a causal mask known when the model is traced is lowered (built from "
             "constants and sizes, e.g. torch.triu(torch.ones(T, T), 1) or a registered "
             "buffer), as softmax(causal=true)")


def causal_keep(shape: Sequence[int], keep: torch.Tensor) -> bool:
    """Whether @p keep, broadcast to @p shape, is True exactly where key
    k <= query q on the last two axes ([.., Q, K]): a causal mask."""
    if len(shape) < 2 or keep.dtype != torch.bool:
        return False
    try:
        b = torch.broadcast_to(keep, tuple(shape))
    except RuntimeError:
        return False
    pattern = torch.ones(shape[-2], shape[-1], dtype=torch.bool).tril()
    return bool(torch.equal(b, pattern.expand(tuple(shape))))


def fill_value(v: Any) -> Optional[float]:
    """A masked_fill's or where's fill: a number or a 0-dimensional constant."""
    if isinstance(v, Weight) and v.value.dim() == 0:
        return float(v.value)
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        return float(v)
    return None


def masks_causally(fill: Optional[float]) -> bool:
    return fill is not None and fill <= MASK_FILL_MAX


def require_causal_fill(L: Context, fill: Optional[float], given: Any) -> None:
    if not masks_causally(fill):
        raise L.unsupported(f"a fill of {given!r} (a causal mask fills with -inf or a "
                            f"value <= {MASK_FILL_MAX:g})")


def additive_causal(shape: Sequence[int], mask: Any) -> bool:
    """Whether @p mask is a constant additive causal mask for scores of
    @p shape: 0 where k <= q, -inf (or at most MASK_FILL_MAX) elsewhere."""
    if not isinstance(mask, Weight) or not mask.value.is_floating_point():
        return False
    m = mask.value
    if not causal_keep(shape, m == 0):
        return False
    return bool((m[m != 0] <= MASK_FILL_MAX).all())


def shape_of(v: Any) -> Optional[Tuple[int, ...]]:
    """The shape of a tensor operand as the trace fixed it, else None."""
    if isinstance(v, (Tensor, Transposed)):
        return v.shape
    if isinstance(v, (External, Weight)):
        return tuple(v.value.shape)
    if isinstance(v, Expanded):
        return v.view
    return None


def check_mask_shape(L: Context, mask: Sequence[int], scores: Sequence[int], what: str) -> None:
    """Refuses an additive attention mask of shape @p mask that the device
    does not add to scores of shape @p scores ([.., Q, K]), naming both
    shapes and why, before anything is compiled. torch checked, when the
    model was traced, that the mask broadcasts to the scores; the device
    broadcasts it over the keys (a last axis of 1) only as one value for
    all the scores or one per row of them."""
    m, sc = [int(d) for d in mask], [int(d) for d in scores]
    lead = [1] * (len(sc) - len(m)) + m[:-1]
    if m and m[-1] != sc[-1] and math.prod(m) != 1 and lead != sc[:-1]:
        raise L.unsupported(
            f"{what} of shape {m} against attention scores of shape {sc}: it is broadcast over "
            f"the {sc[-1]} keys (its last axis is 1), which the device adds only as one value "
            f"for all the scores or one per row of them ({sc[:-1] + [1]}); give the mask the "
            f"keys' axis ([..., {sc[-1]}])")


def broadcast_binary(L: Context, op: str, a: Any, b: Any) -> None:
    """@p op of @p a and @p b, one of them Expanded, as the node's result:
    the other operand has the result's shape, and the expanded one is
    broadcast by the device from its source. A view that merged leading
    axes is undone on the other operand for the operation and redone on
    the result (reshapes are free in the row layout)."""
    e, y = (a, b) if isinstance(a, Expanded) else (b, a)
    y = L.tensor(y, "the other operand")
    out = L.out_shape()
    if y.shape != out:
        raise L.unsupported(f"an operand expanded to {list(e.view)} with another of shape "
                            f"{list(y.shape)}: the device broadcasts only the expanded one, "
                            f"so the other must have the result's shape {list(out)}")
    merged = len(e.shape) - len(e.view) + 1
    if merged > 1 and (len(y.shape) != len(e.view) or y.shape[0] != e.view[0]):
        raise L.unsupported(f"an operand expanded to {list(e.shape)} and viewed as "
                            f"{list(e.view)} with another of shape {list(y.shape)}: the device "
                            "splits the other's first axis as the view merged them, so it must "
                            f"have the view's rank and first axis ({e.view[0]})")
    unmerged = tuple(e.shape[:merged]) + y.shape[1:]
    if merged > 1:
        y = L.emit("reshape", [y], shape=unmerged, dims=list(unmerged))
    operands = [e.source, y] if e is a else [y, e.source]
    if merged == 1:
        L.bind(L.emit(op, operands))
        return
    r = L.emit(op, operands, shape=unmerged)
    L.bind(L.emit("reshape", [r], dims=list(out)))


def additive_from_bool(L: Context, x: Any, mask: Any, given_fill: Any) -> None:
    """zeros.masked_fill(mask, fill) with @p mask from a bool input (fp32 0
    and 1 on the device): mask * fill, the mask made additive, as
    nn.MultiheadAttention makes a bool key_padding_mask. An infinite fill
    is the dtype's largest value times 2, which overflows to exactly -inf
    (or inf) where the mask is 1 and leaves -0 (or 0) where it is 0; a
    product with the infinity itself would be NaN there."""
    fill = fill_value(given_fill)
    if not isinstance(x, Weight) or bool(x.value.count_nonzero()):
        raise L.unsupported("masked_fill of a tensor other than zeros by a mask from the inputs "
                            "(the device makes such a mask additive: zeros filled where it is "
                            "True, e.g. torch.zeros_like(m, dtype=torch.float).masked_fill_(m, "
                            "float('-inf')))")
    if x.value.dtype != BOOL_INPUT_DTYPE:
        raise L.unsupported(f"a {x.value.dtype} fill of a bool input's mask (the device takes "
                            f"bool inputs as {BOOL_INPUT_DTYPE} 0 and 1)")
    if fill is None or math.isnan(fill):
        raise L.unsupported(f"a fill of {given_fill!r} (a number is needed)")
    src = mask.source if isinstance(mask, Expanded) else mask
    m = Tensor(src.node, src.name, src.shape, BOOL_INPUT_DTYPE)  # the IR value as 0 and 1
    if math.isinf(fill):
        largest = float(torch.finfo(BOOL_INPUT_DTYPE).max)
        m = L.emit("mul", [m, math.copysign(largest, fill)], shape=m.shape)
        m = L.emit("mul", [m, 2.0], shape=m.shape)
    else:
        m = L.emit("mul", [m, fill], shape=m.shape)
    out = L.out_shape()
    if isinstance(mask, Expanded):
        L.bind(Expanded(m, mask.shape, mask.view))
    elif m.shape != out:
        L.bind(Expanded(m, out, out))
    else:
        L.bind(m)


def is_bool_input(v: Any) -> bool:
    src = v.source if isinstance(v, Expanded) else v
    return isinstance(src, Tensor) and src.dtype == torch.bool
