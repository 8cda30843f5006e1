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
"""

from __future__ import annotations

from typing import Optional, Tuple

import torch

from . import philox  # noqa: F401 (defines torch.ops.neuron.philox_dropout, embedding_backward)
from .eager import fallback

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


_aten.impl("native_dropout", _native_dropout, "PrivateUse1")
_aten.impl("embedding_dense_backward", _embedding_dense_backward, "PrivateUse1")
