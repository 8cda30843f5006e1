# SPDX-License-Identifier: MIT
"""Data movement: views and reshapes, permutations, slices, concatenation
and splits, broadcasts (kept for the operator that uses them), and the
operators that only alias or copy their operand."""

from __future__ import annotations

import math
from typing import Any, List, Sequence

import torch

from ... import casts  # noqa: F401 (defines torch.ops.neuron.cast)
from ..context import Context
from ..registry import CAST_DTYPES, FLOATS_AND_INT32, lowering
from ..values import Expanded, Tensor, Transposed, Weight

aten = torch.ops.aten
_MOVES = FLOATS_AND_INT32


def _dim(rank: int, d: int) -> int:
    return d + rank if d < 0 else d


@lowering(aten.clone.default, aten.alias.default, aten.detach.default,
          aten.lift_fresh_copy.default, aten.alias_copy.default, dtypes=_MOVES)
def identity(L: Context, node: torch.fx.Node) -> None:
    # A copy or an alias: the same value to the device (values are never
    # written in place).
    v = L.arg(0)
    L.bind(v if isinstance(v, (Expanded, Transposed, Weight)) else L.tensor(v, "self"))


@lowering(aten._to_copy.default, torch.ops.neuron.cast.default, dtypes=_MOVES)
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
    if not new and L.scalar_results:
        new = (1,)  # a 0-dimensional result is the IR's [1] (Context.scalar_results)
    L.bind(x if x.shape == new else L.emit("reshape", [x], dims=list(new)))


@lowering(aten.view.default, aten._unsafe_view.default, aten.reshape.default,
          aten.unsqueeze.default, aten.squeeze.dim, aten.squeeze.dims, aten.squeeze.default,
          aten.view_copy.default, aten.unsqueeze_copy.default, aten.squeeze_copy.dim,
          aten.squeeze_copy.dims, aten.squeeze_copy.default, dtypes=_MOVES)
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
    L.bind(permuted(L, L.tensor(v, "self"), perm))


def _transposed(L: Context, x: Tensor, perm: Sequence[int]) -> Tensor:
    if list(perm) == list(range(len(perm))):
        return x
    return L.emit("transpose", [x], result=False, shape=tuple(x.shape[p] for p in perm),
                  dims=list(perm))


def permuted(L: Context, x: Tensor, perm: Sequence[int]) -> Tensor:
    """@p x with its axes permuted (result axis i is axis perm[i]). The
    compiler moves the last axis only by swapping the last two with the
    others in place: any other permutation that moves it is that swap
    between two permutations keeping the last axis."""
    rank = len(perm)
    perm = [_dim(rank, p) for p in perm]
    last = rank - 1
    swap = list(range(rank))
    if rank >= 2:
        swap[-2], swap[-1] = swap[-1], swap[-2]
    if perm[-1] == last or perm == swap:
        return _transposed(L, x, perm)
    t = perm[-1]
    # t next to the last axis, then swapped with it, then the others in place
    first = [a for a in range(last) if a != t] + [t, last]
    y = _transposed(L, _transposed(L, x, first), swap)
    axes = first[:-2] + [last, t]
    return _transposed(L, y, [axes.index(p) for p in perm])


@lowering(aten.permute.default, aten.permute_copy.default, dtypes=_MOVES)
def permute(L: Context, node: torch.fx.Node) -> None:
    _permute(L, L.arg(0), L.arg(1))


@lowering(aten.transpose.int, aten.transpose_copy.int, dtypes=_MOVES)
def transpose(L: Context, node: torch.fx.Node) -> None:
    rank = len(L.value(node).shape)
    perm = list(range(rank))
    a, b = _dim(rank, L.arg(1)), _dim(rank, L.arg(2))
    perm[a], perm[b] = perm[b], perm[a]
    _permute(L, L.arg(0), perm)


@lowering(aten.t.default, aten.t_copy.default, dtypes=_MOVES)
def t(L: Context, node: torch.fx.Node) -> None:
    rank = len(L.value(node).shape)
    _permute(L, L.arg(0), list(reversed(range(rank))))


def sliced(L: Context, x: Tensor, axis: int, start: int, end: int, shape: Sequence[int]) -> Tensor:
    if start == 0 and end == x.shape[axis]:
        return x
    return L.emit("slice", [x], shape=tuple(shape), axis=axis, start=start, end=end)


@lowering(aten.slice.Tensor, aten.slice_copy.Tensor, dtypes=_MOVES)
def slice_(L: Context, node: torch.fx.Node) -> None:
    x = L.tensor(L.arg(0), "self")
    axis = _dim(len(x.shape), L.arg(1, "dim", 0))
    size = x.shape[axis]
    start, end, step = L.arg(2, "start"), L.arg(3, "end"), L.arg(4, "step", 1)
    if step != 1:
        raise L.unsupported(f"a slice with step {step}")
    start = 0 if start is None else (start + size if start < 0 else min(start, size))
    end = size if end is None else (end + size if end < 0 else min(end, size))
    _nonempty(L)
    L.bind(sliced(L, x, axis, start, end, L.out_shape()))


@lowering(aten.select.int, aten.select_copy.int, dtypes=_MOVES)
def select(L: Context, node: torch.fx.Node) -> None:
    # x[..., i, ...]: the slice [i, i + 1) of the axis, reshaped without it
    x = L.tensor(L.arg(0), "self")
    axis = _dim(len(x.shape), L.arg(1))
    i = L.arg(2)
    i = i + x.shape[axis] if i < 0 else i
    shape = list(x.shape)
    shape[axis] = 1
    piece = sliced(L, x, axis, i, i + 1, shape)
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


# --- copies made of pieces ------------------------------------------------------

# The pieces a lowering below concatenates along one axis (each a data
# movement the program runs; more run on the CPU).
_MAX_PIECES = 256
# The elements of a constant a lowering makes (a mask, a padding).
_MAX_CONSTANT = 1 << 22


def _nonempty(L: Context) -> None:
    """Refuses a node whose result is empty: a program has no empty values
    (the call runs on the CPU, which computes nothing)."""
    if 0 in L.out_shape():
        raise L.unsupported(f"the result is empty ({list(L.out_shape())})")


def _pieces(L: Context, n: int, what: str) -> None:
    if n > _MAX_PIECES:
        raise L.unsupported(f"{what} of {n} pieces (the device concatenates at most "
                            f"{_MAX_PIECES})")


def concatenated(L: Context, parts: List[Tensor], axis: int) -> Tensor:
    if len(parts) == 1:
        return parts[0]
    shape = list(parts[0].shape)
    shape[axis] = sum(p.shape[axis] for p in parts)
    return L.emit("concat", parts, result=False, shape=tuple(shape), axis=axis)


def reshaped(L: Context, x: Tensor, shape: Sequence[int]) -> Tensor:
    shape = tuple(int(s) for s in shape)
    if x.shape == shape:
        return x
    return L.emit("reshape", [x], result=False, shape=shape, dims=list(shape))


def _constant(L: Context, value: torch.Tensor, hint: str) -> Tensor:
    if value.numel() > _MAX_CONSTANT:
        raise L.unsupported(f"a constant of {value.numel()} elements (at most {_MAX_CONSTANT})")
    return L.tensor(Weight(value.contiguous(), hint), hint)


@lowering(aten.narrow_copy.default, dtypes=_MOVES)
def narrow_copy(L: Context, node: torch.fx.Node) -> None:
    # narrow_copy(self, dim, start, length)
    _nonempty(L)
    x = L.tensor(L.arg(0), "self")
    axis = _dim(len(x.shape), L.arg(1))
    start = L.arg(2)
    start = start + x.shape[axis] if start < 0 else start
    L.bind(sliced(L, x, axis, start, start + L.arg(3), L.out_shape()))


@lowering(aten.stack.default, dtypes=_MOVES)
def stack(L: Context, node: torch.fx.Node) -> None:
    # each tensor with a new axis of 1 at dim, concatenated along it
    parts = [L.tensor(v, "tensors") for v in L.arg(0)]
    axis = _dim(len(parts[0].shape) + 1, L.arg(1, "dim", 0))
    _pieces(L, len(parts), "a stack")
    grown = [reshaped(L, p, p.shape[:axis] + (1,) + p.shape[axis:]) for p in parts]
    L.bind(concatenated(L, grown, axis))


@lowering(aten.unbind.int, dtypes=_MOVES)
def unbind(L: Context, node: torch.fx.Node) -> None:
    # the pieces of 1 along dim, without that axis
    x = L.tensor(L.arg(0), "self")
    axis = _dim(len(x.shape), L.arg(1, "dim", 0))
    n = x.shape[axis]
    _pieces(L, n, "an unbind")
    shape = x.shape[:axis] + x.shape[axis + 1:]
    pieces = L.split(x, axis, [1] * n) if n > 1 else [x]
    L.bind([reshaped(L, p, shape) for p in pieces])


def _flipped(L: Context, x: Tensor, axis: int) -> Tensor:
    n = x.shape[axis]
    if n == 1:
        return x
    _pieces(L, n, "a flip")
    return concatenated(L, list(reversed(L.split(x, axis, [1] * n))), axis)


@lowering(aten.flip.default, dtypes=_MOVES)
def flip(L: Context, node: torch.fx.Node) -> None:
    # every index of each axis in reverse: its pieces of 1, concatenated
    # in reverse order
    x = L.tensor(L.arg(0), "self")
    v = x
    for d in sorted({_dim(len(x.shape), d) for d in L.arg(1)}):
        v = _flipped(L, v, d)
    L.bind(v)


@lowering(aten.roll.default, dtypes=_MOVES)
def roll(L: Context, node: torch.fx.Node) -> None:
    # roll(self, shifts, dims=[]): along each axis, its last `shift`
    # elements then the others; without dims, of the flattened tensor
    x = L.tensor(L.arg(0), "self")
    shifts, dims = list(L.arg(1)), list(L.arg(2, "dims", []) or [])
    v = x
    if not dims:
        if len(shifts) != 1:
            raise L.unsupported("several shifts without dims")
        v, dims = reshaped(L, x, (math.prod(x.shape),)), [0]
    for s, d in zip(shifts, dims):
        axis = _dim(len(v.shape), d)
        n = v.shape[axis]
        s %= n
        if s:
            v = concatenated(L, [sliced(L, v, axis, n - s, n, v.shape[:axis] + (s,)
                                      + v.shape[axis + 1:]),
                            sliced(L, v, axis, 0, n - s, v.shape[:axis] + (n - s,)
                                      + v.shape[axis + 1:])], axis)
    L.bind(reshaped(L, v, x.shape))


@lowering(aten.rot90.default, dtypes=_MOVES)
def rot90(L: Context, node: torch.fx.Node) -> None:
    # rot90(self, k=1, dims=[0, 1]): k = 1 flips dims[1] then swaps the
    # two axes, k = 2 flips both, k = 3 flips dims[0] then swaps them
    x = L.tensor(L.arg(0), "self")
    k = L.arg(1, "k", 1) % 4
    a, b = (_dim(len(x.shape), d) for d in L.arg(2, "dims", [0, 1]))
    perm = list(range(len(x.shape)))
    perm[a], perm[b] = perm[b], perm[a]
    if k == 0:
        v = x
    elif k == 2:
        v = _flipped(L, _flipped(L, x, a), b)
    else:
        v = permuted(L, _flipped(L, x, b if k == 1 else a), perm)
    L.bind(v)


@lowering(aten.tril.default, aten.triu.default, dtypes=_MOVES)
def tril_triu(L: Context, node: torch.fx.Node) -> None:
    # x where a constant mask of the last two axes keeps it, else 0
    x = L.tensor(L.arg(0), "self")
    diagonal = L.arg(1, "diagonal", 0)
    rows, cols = x.shape[-2], x.shape[-1]
    keep = torch.ones(rows, cols, dtype=torch.bool)
    keep = keep.tril(diagonal) if node.target == aten.tril.default else keep.triu(diagonal)
    if bool(keep.all()):
        L.bind(x)
        return
    if x.dtype == torch.bool:
        # a mask (SDPA's causal one): its 0 and 1 as values, kept, and != 0
        values = L.emit("cast", [x], result=False, shape=x.shape, dtype=torch.float32,
                        flags=[f"dtype={CAST_DTYPES[torch.float32]}"])
        mask = _constant(L, keep.expand(x.shape).to(torch.float32), node.name + "_mask")
        kept = L.emit("where", [mask, values, 0.0], result=False, shape=x.shape,
                      dtype=torch.float32)
        L.bind(L.emit("ne", [kept, 0.0], dtype=torch.bool))
        return
    mask = _constant(L, keep.expand(x.shape).to(x.dtype), node.name + "_mask")
    L.bind(L.emit("where", [mask, x, 0.0]))


@lowering(aten.constant_pad_nd.default, dtypes=_MOVES)
def constant_pad_nd(L: Context, node: torch.fx.Node) -> None:
    # constant_pad_nd(self, pad, value=0): pad[2i], pad[2i + 1] before and
    # after axis -1 - i; a negative one cuts instead
    _nonempty(L)
    x = L.tensor(L.arg(0), "self")
    pad, value = list(L.arg(1)), float(L.arg(2, "value", 0) or 0)
    v = x
    for i in range(len(pad) // 2):
        axis = len(x.shape) - 1 - i
        before, after = int(pad[2 * i]), int(pad[2 * i + 1])
        n = v.shape[axis]
        start, end = max(-before, 0), n - max(-after, 0)
        if end <= start:
            raise L.unsupported("a padding that cuts an axis away")
        if start or end != n:
            v = sliced(L, v, axis, start, end, v.shape[:axis] + (end - start,)
                          + v.shape[axis + 1:])
        def padding(size: int) -> List[Tensor]:
            if size <= 0:
                return []
            shape = v.shape[:axis] + (size,) + v.shape[axis + 1:]
            return [_constant(L, torch.full(shape, value, dtype=x.dtype), node.name + "_padding")]
        v = concatenated(L, padding(before) + [v] + padding(after), axis)
    L.bind(v)


@lowering(aten.pixel_shuffle.default, aten.pixel_unshuffle.default, dtypes=_MOVES)
def pixel_shuffle(L: Context, node: torch.fx.Node) -> None:
    # [.., C r r, H, W] -> [.., C, H r, W r] and back: a reshape, a
    # permutation and a reshape
    x = L.tensor(L.arg(0), "self")
    r = int(L.arg(1))
    lead, (c, h, w) = x.shape[:-3], x.shape[-3:]
    n = len(lead)
    if node.target == aten.pixel_shuffle.default:
        split = lead + (c // (r * r), r, r, h, w)
        perm = [n, n + 3, n + 1, n + 4, n + 2]
    else:
        split = lead + (c, h // r, r, w // r, r)
        perm = [n, n + 2, n + 4, n + 1, n + 3]
    v = permuted(L, reshaped(L, x, split), list(range(n)) + perm)
    L.bind(reshaped(L, v, L.out_shape()))


@lowering(aten.channel_shuffle.default, dtypes=_MOVES)
def channel_shuffle(L: Context, node: torch.fx.Node) -> None:
    # [B, C, *] -> [B, g, C / g, *] -> swap axes 1 and 2 -> [B, C, *]
    x = L.tensor(L.arg(0), "self")
    g = int(L.arg(1))
    b, c, rest = x.shape[0], x.shape[1], x.shape[2:]
    v = reshaped(L, x, (b, g, c // g) + rest)
    perm = list(range(len(v.shape)))
    perm[1], perm[2] = 2, 1
    L.bind(reshaped(L, permuted(L, v, perm), x.shape))


@lowering(aten.repeat.default, dtypes=_MOVES)
def repeat(L: Context, node: torch.fx.Node) -> None:
    # repeat(self, repeats): copies of the tensor (leading axes of 1
    # added) concatenated along each axis
    _nonempty(L)
    x = L.tensor(L.arg(0), "self")
    repeats = [int(r) for r in L.arg(1)]
    v = reshaped(L, x, (1,) * (len(repeats) - len(x.shape)) + x.shape)
    for axis, n in enumerate(repeats):
        _pieces(L, n, "a repeat")
        v = concatenated(L, [v] * n, axis)
    L.bind(v)


@lowering(aten.slice_scatter.default, dtypes=_MOVES)
def slice_scatter(L: Context, node: torch.fx.Node) -> None:
    # slice_scatter(self, src, dim=0, start=None, end=None, step=1): self
    # with src in place of self[start:end:step] along dim
    x, src = L.tensor(L.arg(0), "self"), L.tensor(L.arg(1), "src")
    axis = _dim(len(x.shape), L.arg(2, "dim", 0))
    n = x.shape[axis]
    start, end, step = L.arg(3, "start"), L.arg(4, "end"), L.arg(5, "step", 1) or 1
    start = 0 if start is None else (start + n if start < 0 else min(start, n))
    end = n if end is None else (end + n if end < 0 else min(end, n))
    if step == 1:
        L.bind(_replaced(L, x, src, axis, start, end))
        return
    # every index of the axis from self or from src, in order
    _pieces(L, n, "a strided slice_scatter")
    picked = range(start, end, step)
    if src.shape[axis] != len(picked):
        raise L.unsupported(f"a source of {src.shape[axis]} for {len(picked)} indices")
    mine = L.split(x, axis, [1] * n)
    theirs = L.split(src, axis, [1] * len(picked)) if len(picked) > 1 else [src]
    parts = [theirs[(i - start) // step] if i in picked else mine[i] for i in range(n)]
    L.bind(concatenated(L, parts, axis))


@lowering(aten.select_scatter.default, dtypes=_MOVES)
def select_scatter(L: Context, node: torch.fx.Node) -> None:
    # select_scatter(self, src, dim, index): self with src as self[index] along dim
    x, src = L.tensor(L.arg(0), "self"), L.tensor(L.arg(1), "src")
    axis = _dim(len(x.shape), L.arg(2))
    i = L.arg(3)
    i = i + x.shape[axis] if i < 0 else i
    src = reshaped(L, src, x.shape[:axis] + (1,) + x.shape[axis + 1:])
    L.bind(_replaced(L, x, src, axis, i, i + 1))


def _replaced(L: Context, x: Tensor, src: Tensor, axis: int, start: int, end: int) -> Tensor:
    """@p x with @p src in place of [start, end) of @p axis."""
    if src.shape[axis] != end - start:
        raise L.unsupported(f"a source of {src.shape[axis]} for [{start}, {end})")
    n = x.shape[axis]
    parts = []
    for a, b, piece in ((0, start, None), (start, end, src), (end, n, None)):
        if piece is not None:
            parts.append(piece)
        elif b > a:
            parts.append(sliced(L, x, axis, a, b, x.shape[:axis] + (b - a,)
                                   + x.shape[axis + 1:]))
    return concatenated(L, parts, axis)
