# SPDX-License-Identifier: MIT
"""Copies of strided views as device kernels. The runtime's ``copy_``
between neuron tensors (python/csrc/runtime/copy.cpp) calls
``neuron::strided_contiguous(t)`` (a new contiguous tensor of @p t's
values) and ``neuron::strided_write(dst, src)`` (src's values into the
strided view dst) for what one DMA copy cannot do: a slice, a step, a
broadcast, a transposed view made contiguous, a write into such a view.
Each is a kernel in the stream's order, never a round trip through the
host that waits for the device.

Their kernels take the view's memory as rows: ``rows`` [R, W] (the view's
first element at ``offset`` in the first row) and the view's sizes and
strides in those elements. ``neuron::gather_strided(rows, size, stride,
offset)`` is the view, contiguous; ``neuron::scatter_strided(rows, src,
size, stride, offset)`` is ``rows`` with the view's elements replaced by
``src``, the others kept. Lowered in lowering/ops/strided.py, which also
decides which views a kernel reads (others run on the CPU). Elements are
moved as bits: a dtype the device does not compute in is moved as one of
the same width (``_carrier``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import List, Tuple

import torch

_library = torch.library.Library("neuron", "FRAGMENT")  # noqa: TOR901
_library.define("gather_strided(Tensor rows, int[] size, int[] stride, int offset) -> Tensor")
_library.define("scatter_strided(Tensor rows, Tensor src, int[] size, int[] stride, int offset)"
                " -> Tensor")
_library.define("strided_contiguous(Tensor self) -> Tensor")
_library.define("strided_write(Tensor(a!) self, Tensor src) -> ()")

# The kernels' operators: they move the dtypes _carrier gives.
OPERATORS = frozenset({torch.ops.neuron.gather_strided.default,
                       torch.ops.neuron.scatter_strided.default})

# The widest row a kernel takes (the compiler's row layout holds 64 KiB
# per partition); narrower rows are chosen when the view's strides allow.
_ROW_BYTES = 64 * 1024


def _as_view(rows: torch.Tensor, size: List[int], stride: List[int],
             offset: int) -> torch.Tensor:
    return rows.reshape(-1).as_strided(size, stride, rows.storage_offset() + offset)


def _gather_cpu(rows: torch.Tensor, size: List[int], stride: List[int],
                offset: int) -> torch.Tensor:
    return _as_view(rows, size, stride, offset).contiguous()


def _gather_meta(rows: torch.Tensor, size: List[int], stride: List[int],
                 offset: int) -> torch.Tensor:
    return rows.new_empty(size)


def _scatter_cpu(rows: torch.Tensor, src: torch.Tensor, size: List[int], stride: List[int],
                 offset: int) -> torch.Tensor:
    out = rows.clone()
    _as_view(out, size, stride, offset).copy_(src)
    return out


def _scatter_meta(rows: torch.Tensor, src: torch.Tensor, size: List[int], stride: List[int],
                  offset: int) -> torch.Tensor:
    return torch.empty_like(rows)


def _carrier(dtype: torch.dtype) -> Tuple[torch.dtype, int]:
    """The dtype the kernels move @p dtype's elements as, and how many of
    its elements make one (an element of one byte is never asked for)."""
    if dtype in (torch.float32, torch.bfloat16, torch.float16, torch.int32):
        return dtype, 1
    if dtype.itemsize == 2:
        return torch.float16, 1
    return torch.int32, dtype.itemsize // 4


@dataclass
class _Memory:
    """A view's memory as the kernels take it: @p rows, a view of the
    storage (@p in_place) or a copy of the elements the view spans, and the
    view's sizes, strides and first element's offset in them."""
    rows: torch.Tensor
    size: List[int]
    stride: List[int]
    offset: int
    in_place: bool
    storage: torch.Tensor  # the whole storage, 1-dimensional, of the carrier dtype
    first: int  # the view's first element in it
    span: int  # the elements from it to the view's last


def _width(size: List[int], stride: List[int], itemsize: int) -> int:
    """The row width: the largest stride of the view's axes that every
    larger stride is a multiple of and whose row fits _ROW_BYTES (1 when
    there is none: a row per element)."""
    strides = sorted({s for n, s in zip(size, stride) if n > 1 and s > 0}, reverse=True)
    for i, s in enumerate(strides):
        if s * itemsize <= _ROW_BYTES and all(o % s == 0 for o in strides[:i]):
            return s
    return 1


def _memory(t: torch.Tensor) -> _Memory:
    carrier, per = _carrier(t.dtype)
    elements = t.untyped_storage().nbytes() // t.element_size()
    storage = t.as_strided((elements,), (1,), 0)
    size, stride, first = list(t.shape), list(t.stride()), t.storage_offset()
    if carrier != t.dtype:
        storage = storage.view(carrier)
        stride, first = [s * per for s in stride], first * per
        if per > 1:
            size, stride = size + [per], stride + [1]
    span = 1 + sum((n - 1) * s for n, s in zip(size, stride) if n > 0)
    width = _width(size, stride, storage.element_size())
    # The view's elements of a stride below the width lie in one row,
    # from the offset on.
    in_row = 1 + sum((n - 1) * s for n, s in zip(size, stride) if 0 < s < width)
    rows = -(-span // width)
    # The storage's rows that end with it when the view's do not fit from
    # its first element: the view then starts further into the first row.
    offset = max(0, first + rows * width - elements)
    if offset <= first and offset + in_row <= width and offset + span <= rows * width:
        memory = storage.as_strided((rows, width), (width, 1), first - offset)
        return _Memory(memory, size, stride, offset, True, storage, first, span)
    # A copy of the elements the view spans, then: one DMA copy.
    memory = storage.new_empty((rows, width))
    memory.view(-1)[:span].copy_(storage[first:first + span])
    return _Memory(memory, size, stride, 0, False, storage, first, span)


def _strided_contiguous(t: torch.Tensor) -> torch.Tensor:
    m = _memory(t)
    out = torch.ops.neuron.gather_strided(m.rows, m.size, m.stride, m.offset)
    return out.view(-1).view(t.dtype).view(t.shape)


def _strided_write(dst: torch.Tensor, src: torch.Tensor) -> None:
    m = _memory(dst)
    value = src.contiguous().view(-1).view(m.rows.dtype).view(m.size)
    written = torch.ops.neuron.scatter_strided(m.rows, value, m.size, m.stride, m.offset)
    if m.in_place:
        m.rows.copy_(written)
    else:
        m.storage[m.first:m.first + m.span].copy_(written.view(-1)[:m.span])


_library.impl("gather_strided", _gather_cpu, "CPU")
_library.impl("gather_strided", _gather_meta, "Meta")
_library.impl("scatter_strided", _scatter_cpu, "CPU")
_library.impl("scatter_strided", _scatter_meta, "Meta")
_library.impl("strided_contiguous", _strided_contiguous, "PrivateUse1")
_library.impl("strided_write", _strided_write, "PrivateUse1")
