# SPDX-License-Identifier: MIT
"""Eager kernels on the device's random numbers and scatter-adds (ISA 1.2,
philox.py):

* ``aten::native_dropout`` (``F.dropout`` in training) draws its mask from
  the device's Philox-4x32-10 stream: the key is the device generator's
  seed and Philox offset (``torch.neuron.manual_seed`` sets the seed and
  resets the offset to 0), passed to the program as an int32[4] tensor
  (seed lo, seed hi, offset lo, offset hi), and every call advances the
  offset by one, as CUDA's generator advances its own: one program, a new
  reproducible mask per call.
* ``aten::embedding_dense_backward`` adds the gradient rows into the rows
  of their ids on the device (the compiler's index_add). PyTorch's ids are
  int64: they are read to the host, checked to lie in [0, num_weights) (an
  IndexError otherwise, as on the CPU), and passed as int32, which is then
  exact.
* ``aten::embedding`` and ``aten::index_select`` along dim 0 gather the
  table's rows on the device (DMA_GATHER, ``neuron::embedding`` and
  ``neuron::index_select``) without reading the ids: int32 ids as they
  are, int64 ids as the (low, high) int32 words their storage holds (a
  view). The device takes an id whose high word is 0 and whose low word
  is in [0, V); any other (negative, too large) faults the job, so no
  wrong row is read: the error is raised at the next synchronization,
  naming the operator. Tables of other dtypes or beyond 2^24 rows, other
  dims and empty calls run as before.
"""

from __future__ import annotations

from typing import Optional, Tuple

import torch

from . import philox  # noqa: F401 (defines torch.ops.neuron.philox_dropout, embedding_backward)
from .eager import fallback, kernels
from .lowering.ops.sampling import MAX_GATHER_ROWS

_MASK32 = 0xFFFFFFFF
_aten = torch.library.Library("aten", "IMPL")  # noqa: TOR901


# --- the device generator's Philox key ----------------------------------------

def philox_key(device: torch.device, generator: Optional[torch.Generator] = None) -> torch.Tensor:
    """The int32[4] key of the next random operator on @p device (seed lo,
    seed hi, offset lo, offset hi) from @p generator (the device's default
    one), whose offset it advances by one."""
    gen = generator if generator is not None else torch.neuron.default_generator(device)
    seed, offset = gen.initial_seed() & ((1 << 64) - 1), gen.get_offset()
    gen.set_offset(offset + 1)
    words = [seed & _MASK32, seed >> 32, offset & _MASK32, (offset >> 32) & _MASK32]
    key = torch.tensor([w - (1 << 32) if w >= 1 << 31 else w for w in words], dtype=torch.int32)
    return key.to(device)


# --- the eager kernels ---------------------------------------------------------

def _native_dropout(x: torch.Tensor, p: float,
                    train: Optional[bool] = None) -> Tuple[torch.Tensor, torch.Tensor]:
    if train is not None and not train or p == 0:
        return x.clone(), torch.ones_like(x, dtype=torch.bool)
    if p == 1:
        return torch.zeros_like(x), torch.zeros_like(x, dtype=torch.bool)
    if not 0 < p < 1:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    return torch.ops.neuron.philox_dropout(x, philox_key(x.device), p)


def _embedding_dense_backward(grad: torch.Tensor, indices: torch.Tensor, num_weights: int,
                              padding_idx: int, scale_grad_by_freq: bool) -> torch.Tensor:
    op = torch.ops.aten.embedding_dense_backward.default
    args = (grad, indices, num_weights, padding_idx, scale_grad_by_freq)
    if scale_grad_by_freq or grad.dtype not in (torch.float32, torch.bfloat16) \
            or grad.numel() == 0:
        why = "scale_grad_by_freq" if scale_grad_by_freq else f"a {grad.dtype} gradient"
        return fallback.run_on_cpu(op, args, {}, why)
    ids = indices.reshape(-1).cpu()
    bad = (ids < 0) | (ids >= num_weights)
    if bool(bad.any()):
        raise IndexError(f"embedding backward: index {int(ids[bad][0])} is out of range for "
                         f"{num_weights} rows")
    g = grad.reshape(-1, grad.shape[-1])
    if padding_idx >= 0:
        g = g.masked_fill((ids == padding_idx).reshape(-1, 1).to(grad.device), 0.0)
    return torch.ops.neuron.embedding_backward(g, ids.to(torch.int32).reshape(-1, 1).to(
        grad.device), num_weights)


_GATHERED = (torch.float32, torch.bfloat16, torch.float16)


def _why_not_gathered(table: torch.Tensor, ids: torch.Tensor) -> Optional[str]:
    """Why the device does not gather rows of @p table at @p ids (then the
    call runs on the CPU), or None."""
    if table.device.type != "neuron" or ids.device != table.device:
        return f"a table on {table.device} and ids on {ids.device}"
    if table.dtype not in _GATHERED:
        return f"a {table.dtype} table"
    if ids.dtype not in (torch.int64, torch.int32):
        return f"{ids.dtype} ids"
    if table.dim() == 0:
        return "a 0-dimensional table"
    if table.shape[0] > MAX_GATHER_ROWS:
        return f"a table of {table.shape[0]} rows (at most {MAX_GATHER_ROWS} on the device)"
    return None


def _gathered(op: torch._ops.OpOverload, table: torch.Tensor, ids: torch.Tensor) -> torch.Tensor:
    """Rows @p ids (any shape) of @p table [V, ...]: ids.shape + [...], by
    @p op (neuron::embedding or neuron::index_select) on the device."""
    rest = tuple(table.shape[1:])
    flat = ids.reshape(-1)
    if flat.numel() == 0 or table.numel() == 0:
        return table.new_empty(tuple(ids.shape) + rest)
    if ids.dtype == torch.int64:
        # the storage's little-endian (low, high) words: a view, no copy
        words = flat.contiguous().view(torch.int32).reshape(-1, 2)
    else:
        words = flat.reshape(-1, 1)
    rows = op(table.reshape(table.shape[0], -1), words)
    return rows.reshape(tuple(ids.shape) + rest)


def _embedding(weight: torch.Tensor, indices: torch.Tensor, padding_idx: int = -1,
               scale_grad_by_freq: bool = False, sparse: bool = False) -> torch.Tensor:
    # padding_idx, scale_grad_by_freq and sparse change only the backward
    op = torch.ops.aten.embedding.default
    why = _why_not_gathered(weight, indices)
    if why is None and weight.dim() != 2:
        why = f"a {weight.dim()}-d weight"
    if why is not None:
        return fallback.run_on_cpu(op, (weight, indices, padding_idx, scale_grad_by_freq, sparse),
                                   {}, why)
    kernels.count_device_op(op)
    return _gathered(torch.ops.neuron.embedding.default, weight, indices)


def _index_select(x: torch.Tensor, dim: int, index: torch.Tensor) -> torch.Tensor:
    op = torch.ops.aten.index_select.default
    why = _why_not_gathered(x, index)
    if why is None and dim not in (0, -x.dim()):
        why = f"dim={dim} (the device gathers along dim 0)"
    if why is None and index.dim() > 1:
        why = f"a {index.dim()}-d index"
    if why is not None:
        return fallback.run_on_cpu(op, (x, dim, index), {}, why)
    kernels.count_device_op(op)
    return _gathered(torch.ops.neuron.index_select.default, x, index.reshape(-1))


_aten.impl("native_dropout", _native_dropout, "PrivateUse1")
_aten.impl("embedding", _embedding, "PrivateUse1")
_aten.impl("index_select", _index_select, "PrivateUse1")
_aten.impl("embedding_dense_backward", _embedding_dense_backward, "PrivateUse1")
