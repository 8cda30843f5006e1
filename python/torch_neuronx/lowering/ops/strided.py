# SPDX-License-Identifier: MIT
"""The kernels of the copies of strided views (torch_neuronx.strided). The
view's memory comes as rows; its axes, taken from the largest stride to
the smallest, are levels: an axis whose stride is whole rows splits the
rows into groups of that many (padded to a whole number of groups), of
which the view's take the first; the axes of smaller strides do the same
inside a row, from the view's offset. Every slice, step, transpose,
permutation and broadcast of a dense tensor reads so; views whose axes
overlap or interleave run on the CPU."""

from __future__ import annotations

from typing import Callable, List, Sequence, Tuple

import torch

from ... import strided  # noqa: F401 (defines torch.ops.neuron.*_strided)
from ..context import Context
from ..registry import FLOATS_AND_INT32, lowering
from ..values import Tensor
from .broadcast import materialised
from .movement import concatenated, permuted, reshaped, sliced

neuron = torch.ops.neuron

# A level: its step along the memory axis, its elements.
Level = Tuple[int, int]


def _levels(L: Context, size: Sequence[int], stride: Sequence[int], rows: Tuple[int, ...],
            offset: int) -> Tuple[List[int], List[Level], List[Level]]:
    """The view's axes of more than one element and a stride, outermost
    first, and its levels across @p rows and inside a row. Refuses a view
    whose axes do not each step over the next ones' elements, or whose
    levels cross rows or pass their end."""
    height, width = rows
    axes = sorted((d for d in range(len(size)) if size[d] > 1 and stride[d] > 0),
                  key=lambda d: -stride[d])
    view = f"a view of sizes {list(size)} and strides {list(stride)}"
    inner = 1  # the elements the axes after the one at hand span
    for d in reversed(axes):
        if stride[d] < inner:
            raise L.unsupported(f"{view}: axis {d} steps inside the {inner} elements the axes "
                                "of smaller strides span")
        if stride[d] >= width and stride[d] % width:
            raise L.unsupported(f"{view}: axis {d} steps across rows of {width}")
        inner += (size[d] - 1) * stride[d]
    across = [(stride[d] // width, size[d]) for d in axes if stride[d] >= width]
    inside = [(stride[d], size[d]) for d in axes if stride[d] < width]
    span = 1 + sum((n - 1) * step for step, n in inside)
    if offset + span > width or 1 + sum((n - 1) * step for step, n in across) > height:
        raise L.unsupported(f"{view}: from offset {offset}, it passes the end of the rows "
                            f"{list(rows)}")
    return axes, across, inside


def _grown(x: Tensor, axis: int, n: int) -> Tuple[int, ...]:
    return x.shape[:axis] + (n,) + x.shape[axis + 1:]


def _piece(L: Context, x: Tensor, axis: int, start: int, end: int) -> Tensor:
    return sliced(L, x, axis, start, end, _grown(x, axis, end - start))


def _split(L: Context, x: Tensor, axis: int, step: int) -> Tensor:
    """@p x's @p axis as two, of @p step elements inside: padded to a whole
    number of steps with its own first elements (never read as the view:
    the padding is shorter than the axis, which holds one step and more)."""
    length = x.shape[axis]
    whole = -(-length // step) * step
    if whole > length:
        x = concatenated(L, [x, _piece(L, x, axis, 0, whole - length)], axis)
    return reshaped(L, x, x.shape[:axis] + (whole // step, step) + x.shape[axis + 1:])


def _merged(L: Context, x: Tensor, axis: int, length: int) -> Tensor:
    """_split undone: @p axis and the next as one of @p length."""
    joined = reshaped(L, x, x.shape[:axis] + (x.shape[axis] * x.shape[axis + 1],)
                      + x.shape[axis + 2:])
    return _piece(L, joined, axis, 0, length)


def _without(L: Context, x: Tensor, axis: int) -> Tensor:
    return reshaped(L, x, x.shape[:axis] + x.shape[axis + 1:])


def _with(L: Context, x: Tensor, axis: int) -> Tensor:
    return reshaped(L, x, x.shape[:axis] + (1,) + x.shape[axis:])


def _levels_read(L: Context, x: Tensor, axis: int, levels: List[Level]) -> Tuple[Tensor, int, bool]:
    """@p x with each level's elements taken along the memory axis @p axis,
    an axis per level; the memory axis after them, and whether it remains
    (a level of step 1 takes consecutive elements: none remain)."""
    for step, n in levels:
        if step == 1:  # the last level
            return _piece(L, x, axis, 0, n), axis + 1, False
        x, axis = _piece(L, _split(L, x, axis, step), axis, 0, n), axis + 1
    return x, axis, True


def _consecutive(levels: List[Level]) -> bool:
    """Whether @p levels take consecutive elements inside a row (at most one
    level, of step 1). Others step along the row: the kernels make the row
    an axis of rows first, which the device moves whole (moving elements
    of a row one by one is slow to compile and to run)."""
    return not levels or levels == [(1, levels[0][1])]


def _first_of(L: Context, x: Tensor, axis: int) -> Tensor:
    return _without(L, _piece(L, x, axis, 0, 1), axis)


def _gathered(L: Context, rows: Tensor, across: List[Level], inside: List[Level],
              offset: int) -> Tuple[Tensor, List[int]]:
    """The view's elements of @p rows, an axis per level, and the level of
    each of its axes (across rows first, then inside a row, unless the row
    became an axis of rows: then inside first)."""
    x, axis, remains = _levels_read(L, rows, 0, across)
    if remains:  # the first row of the innermost level's group
        x = _first_of(L, x, axis)
    last = len(x.shape) - 1
    x = _piece(L, x, last, offset, x.shape[last])
    if _consecutive(inside):
        x, axis, remains = _levels_read(L, x, last, inside)
        # (the remaining axis, of 1 when taken, is dropped by the caller's reshape)
        return _piece(L, x, axis, 0, 1) if remains else x, list(range(len(across) + len(inside)))
    x = permuted(L, x, [last] + list(range(last)))
    x, axis, remains = _levels_read(L, x, 0, inside)
    if remains:
        x = _first_of(L, x, axis)
    return x, [len(across) + i for i in range(len(inside))] + list(range(len(across)))


def _replaced(L: Context, x: Tensor, axis: int, start: int, end: int,
              fn: Callable[[Tensor], Tensor]) -> Tensor:
    """@p x with [start, end) of @p axis replaced by fn of it."""
    parts = [_piece(L, x, axis, 0, start)] if start > 0 else []
    parts.append(fn(_piece(L, x, axis, start, end)))
    if end < x.shape[axis]:
        parts.append(_piece(L, x, axis, end, x.shape[axis]))
    return concatenated(L, parts, axis)


# What replaces the elements of the levels read: of x, and whether its
# memory axis (the last but one across rows, the last inside a row)
# remains after them.
Rest = Callable[[Tensor, bool], Tensor]


def _scattered(L: Context, rows: Tensor, src: Tensor, across: List[Level],
               inside: List[Level], offset: int) -> Tensor:
    """@p rows with the view's elements replaced by @p src (an axis per
    level), the others kept."""
    def level(x: Tensor, axis: int, levels: List[Level], rest: Rest) -> Tensor:
        if not levels:
            return rest(x, True)
        (step, n), length = levels[0], x.shape[axis]
        if step == 1:  # the last level: consecutive elements
            return _replaced(L, x, axis, 0, n, lambda p: rest(p, False))
        y = _replaced(L, _split(L, x, axis, step), axis, 0, n,
                      lambda p: level(p, axis + 1, levels[1:], rest))
        return _merged(L, y, axis, length)

    def element(x: Tensor, remains: bool) -> Tensor:
        if not remains:
            return reshaped(L, src, x.shape)
        return _replaced(L, x, len(x.shape) - 1, 0, 1, lambda p: reshaped(L, src, p.shape))

    def in_rows(r: Tensor) -> Tensor:  # r: the view's rows, each from offset
        last = len(r.shape) - 1
        if _consecutive(inside):
            return _replaced(L, r, last, offset, r.shape[last],
                             lambda p: level(p, last, inside, element))
        # the row made an axis of rows (_consecutive), src's axes as its
        def transposed(p: Tensor) -> Tensor:
            t = level(permuted(L, p, [last] + list(range(last))), 0, inside, element_of_rows)
            return permuted(L, t, list(range(1, last + 1)) + [0])
        return _replaced(L, r, last, offset, r.shape[last], transposed)

    def element_of_rows(x: Tensor, remains: bool) -> Tensor:
        # x: [inside levels..., (remaining memory,) across levels...]
        k = len(inside)
        moved = permuted(L, src, list(range(len(across), len(across) + k))
                         + list(range(len(across)))) if across else src
        if not remains:
            return reshaped(L, moved, x.shape)
        shape = x.shape[:k] + (1,) + x.shape[k + 1:]
        return _replaced(L, x, k, 0, 1, lambda p: reshaped(L, moved, shape))

    def row(x: Tensor, remains: bool) -> Tensor:
        if not remains:
            return in_rows(x)
        axis = len(x.shape) - 2  # the first row of the innermost level's group
        return _replaced(L, x, axis, 0, 1,
                         lambda r: _with(L, in_rows(_without(L, r, axis)), axis))

    return level(rows, 0, across, row)


def _arguments(L: Context, first: int) -> Tuple[List[int], List[int], int]:
    return ([int(s) for s in L.arg(first)], [int(s) for s in L.arg(first + 1)],
            int(L.arg(first + 2)))


@lowering(neuron.gather_strided.default, dtypes=FLOATS_AND_INT32)
def gather_strided(L: Context, node: torch.fx.Node) -> None:
    rows = L.tensor(L.arg(0), "rows")
    size, stride, offset = _arguments(L, 1)
    axes, across, inside = _levels(L, size, stride, rows.shape, offset)
    x, levels = _gathered(L, rows, across, inside, offset)
    x = reshaped(L, x, [size[axes[i]] for i in levels] or [1])
    order = sorted(axes)
    if len(order) > 1:
        x = permuted(L, x, [levels.index(axes.index(d)) for d in order])
    x = reshaped(L, x, [size[d] if d in axes else 1 for d in range(len(size))] or [1])
    out = tuple(size) or (1,)
    L.bind(x if x.shape == out else materialised(L, x, out))


@lowering(neuron.scatter_strided.default, dtypes=FLOATS_AND_INT32)
def scatter_strided(L: Context, node: torch.fx.Node) -> None:
    rows = L.tensor(L.arg(0), "rows")
    src = L.tensor(L.arg(1), "src")
    size, stride, offset = _arguments(L, 2)
    if any(n > 1 and s == 0 for n, s in zip(size, stride)):
        raise L.unsupported("a write into a broadcast view (its elements share memory)")
    axes, across, inside = _levels(L, size, stride, rows.shape, offset)
    order = sorted(axes)
    x = reshaped(L, src, [size[d] for d in order] or [1])
    if len(order) > 1:
        x = permuted(L, x, [order.index(d) for d in axes])
    L.bind(_scattered(L, rows, x, across, inside, offset))
