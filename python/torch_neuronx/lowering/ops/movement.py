# SPDX-License-Identifier: MIT
"""Data movement: views and reshapes, permutations, slices, concatenation
and splits, broadcasts (kept for the operator that uses them), and the
operators that only alias or copy their operand."""

from __future__ import annotations

import math
from typing import Any, List, Sequence

import torch

from ..context import Context
from ..registry import CAST_DTYPES, FLOATS_AND_INT32, lowering
from ..values import Expanded, Tensor, Transposed, Weight

aten = torch.ops.aten
_MOVES = FLOATS_AND_INT32


def _dim(rank: int, d: int) -> int:
    return d + rank if d < 0 else d


@lowering(aten.clone.default, aten.alias.default, aten.detach.default,
          aten.lift_fresh_copy.default, dtypes=_MOVES)
def identity(L: Context, node: torch.fx.Node) -> None:
    # A copy or an alias: the same value to the device (values are never
    # written in place).
    v = L.arg(0)
    L.bind(v if isinstance(v, (Expanded, Transposed, Weight)) else L.tensor(v, "self"))


@lowering(aten._to_copy.default, dtypes=_MOVES)
def to_copy(L: Context, node: torch.fx.Node) -> None:
    # A copy, or a conversion: the IR's cast (round to nearest-even
    # between floats, toward zero to int32, != 0 to bool).
    x = L.tensor(L.arg(0), "self")
    want = L.value(node).dtype
    if want == x.dtype:
        L.bind(x)
        return
    if want not in CAST_DTYPES:
        raise L.unsupported(f"a conversion from {x.dtype} to {want}")
    L.bind(L.emit("cast", [x], flags=[f"dtype={CAST_DTYPES[want]}"], dtype=want))


def _reshape(L: Context, v: Any) -> None:
    new = L.out_shape()
    if isinstance(v, Expanded):
        for merged in range(1, len(v.shape) + 1):
            if (math.prod(v.shape[:merged]),) + v.shape[merged:] == new:
                L.bind(Expanded(v.source, v.shape, new))
                return
        raise L.unsupported(f"a reshape of a tensor expanded to {list(v.shape)} into "
                            f"{list(new)}: only merging its leading axes is lowered")
    x = L.tensor(v, "self")
    L.bind(x if x.shape == new else L.emit("reshape", [x], dims=list(new)))


@lowering(aten.view.default, aten._unsafe_view.default, aten.reshape.default,
          aten.unsqueeze.default, aten.squeeze.dim, aten.squeeze.dims, aten.squeeze.default,
          dtypes=_MOVES)
def reshape(L: Context, node: torch.fx.Node) -> None:
    # Every form of a reshape: the traced result's shape.
    _reshape(L, L.arg(0))


@lowering(aten.expand.default, dtypes=_MOVES)
def expand(L: Context, node: torch.fx.Node) -> None:
    # A broadcast the device does in the operator that uses it (Expanded).
    v = L.arg(0)
    shape = L.out_shape()
    if isinstance(v, Transposed) and v.shape == shape:
        L.bind(v)
        return
    x = L.tensor(v, "self")
    L.bind(x if x.shape == shape else Expanded(x, shape, shape))


def _permute(L: Context, v: Any, perm: Sequence[int]) -> None:
    rank = len(perm)
    perm = [_dim(rank, p) for p in perm]
    if perm == list(range(rank)):
        L.bind(L.tensor(v, "self"))
        return
    swap = list(range(rank))
    if rank >= 2:
        swap[-2], swap[-1] = swap[-1], swap[-2]
    if perm == swap:
        # the last two axes swapped: a matmul takes it as its flag
        L.bind(v.source if isinstance(v, Transposed) else Transposed(L.tensor(v, "self")))
        return
    L.bind(L.emit("transpose", [L.tensor(v, "self")], dims=perm))


@lowering(aten.permute.default, dtypes=_MOVES)
def permute(L: Context, node: torch.fx.Node) -> None:
    _permute(L, L.arg(0), L.arg(1))


@lowering(aten.transpose.int, dtypes=_MOVES)
def transpose(L: Context, node: torch.fx.Node) -> None:
    rank = len(L.value(node).shape)
    perm = list(range(rank))
    a, b = _dim(rank, L.arg(1)), _dim(rank, L.arg(2))
    perm[a], perm[b] = perm[b], perm[a]
    _permute(L, L.arg(0), perm)


@lowering(aten.t.default, dtypes=_MOVES)
def t(L: Context, node: torch.fx.Node) -> None:
    rank = len(L.value(node).shape)
    _permute(L, L.arg(0), list(reversed(range(rank))))


def _slice_of(L: Context, x: Tensor, axis: int, start: int, end: int, shape: Sequence[int]) -> Tensor:
    if start == 0 and end == x.shape[axis]:
        return x
    return L.emit("slice", [x], shape=tuple(shape), axis=axis, start=start, end=end)


@lowering(aten.slice.Tensor, dtypes=_MOVES)
def slice_(L: Context, node: torch.fx.Node) -> None:
    x = L.tensor(L.arg(0), "self")
    axis = _dim(len(x.shape), L.arg(1, "dim", 0))
    size = x.shape[axis]
    start, end, step = L.arg(2, "start"), L.arg(3, "end"), L.arg(4, "step", 1)
    if step != 1:
        raise L.unsupported(f"a slice with step {step}")
    start = 0 if start is None else (start + size if start < 0 else min(start, size))
    end = size if end is None else (end + size if end < 0 else min(end, size))
    L.bind(_slice_of(L, x, axis, start, end, L.out_shape()))


@lowering(aten.select.int, dtypes=_MOVES)
def select(L: Context, node: torch.fx.Node) -> None:
    # x[..., i, ...]: the slice [i, i + 1) of the axis, reshaped without it
    x = L.tensor(L.arg(0), "self")
    axis = _dim(len(x.shape), L.arg(1))
    i = L.arg(2)
    i = i + x.shape[axis] if i < 0 else i
    shape = list(x.shape)
    shape[axis] = 1
    piece = _slice_of(L, x, axis, i, i + 1, shape)
    L.bind(L.emit("reshape", [piece], dims=list(L.out_shape())))


@lowering(aten.cat.default, dtypes=_MOVES)
def cat(L: Context, node: torch.fx.Node) -> None:
    parts = [L.tensor(v, "tensors") for v in L.arg(0)]
    axis = _dim(len(parts[0].shape), L.arg(1, "dim", 0))
    L.bind(L.emit("concat", parts, axis=axis))


def _split(L: Context, x: Tensor, axis: int, sizes: List[int]) -> None:
    L.bind(L.split(x, axis, sizes))


@lowering(aten.split.Tensor, dtypes=_MOVES)
def split(L: Context, node: torch.fx.Node) -> None:
    # pieces of split_size elements, the last one shorter (torch.chunk too)
    x = L.tensor(L.arg(0), "self")
    axis = _dim(len(x.shape), L.arg(2, "dim", 0))
    size, piece = x.shape[axis], L.arg(1)
    _split(L, x, axis, [min(piece, size - s) for s in range(0, size, piece)])


@lowering(aten.split_with_sizes.default, dtypes=_MOVES)
def split_with_sizes(L: Context, node: torch.fx.Node) -> None:
    x = L.tensor(L.arg(0), "self")
    _split(L, x, _dim(len(x.shape), L.arg(2, "dim", 0)), [int(n) for n in L.arg(1)])


@lowering(aten.copy_.default, dtypes=_MOVES)
def copy_(L: Context, node: torch.fx.Node) -> None:
    # dst.copy_(src), as PyTorch's decomposition of an in-place operator
    # on a temporary writes it (zeros_like(m).masked_fill_(m, -inf)): dst
    # is src's value from here on, for this node and for dst's later uses.
    dst = node.args[0]
    if not isinstance(dst, torch.fx.Node) or dst.op == "placeholder":
        raise L.unsupported("a write into an input or a parameter of the model")
    src = L.arg(1)
    if tuple(L.value(dst).shape) != tuple(L.value(node.args[1]).shape) or \
            L.value(dst).dtype != L.value(node.args[1]).dtype:
        raise L.unsupported("a copy that broadcasts or converts its source")
    L.env[dst] = src
    L.bind(src)
