# SPDX-License-Identifier: MIT
"""Operators that only move data, run for dtypes the device does not
compute in (int64 labels, float64, int16) as the device's fills and
copies of strided views (torch_neuronx.strided), which move any dtype's
bits in the stream's order, instead of on the CPU (which waits for the
device). Elements of one byte are left to the CPU: the device moves them
through the host."""

from __future__ import annotations

from typing import Any, Callable, Dict, Optional, Sequence

import torch

aten = torch.ops.aten


def _constant_pad_nd(x: torch.Tensor, pad: Sequence[int], value: Any = 0) -> Optional[torch.Tensor]:
    """As ATen's kernel makes it: a tensor of @p value, @p x copied into its
    middle. None (for the CPU) for a negative pad, which crops."""
    if any(p < 0 for p in pad) or len(pad) % 2 or len(pad) // 2 > x.dim():
        return None
    shape, inner = list(x.shape), [slice(None)] * x.dim()
    for i in range(len(pad) // 2):
        axis = x.dim() - 1 - i
        before, after = pad[2 * i], pad[2 * i + 1]
        inner[axis] = slice(before, before + shape[axis])
        shape[axis] += before + after
    out = torch.empty(shape, dtype=x.dtype, device=x.device)
    out.fill_(value)
    out[tuple(inner)].copy_(x)
    return out


MOVES: Dict[torch._ops.OpOverload, Callable[..., Optional[torch.Tensor]]] = {
    aten.constant_pad_nd.default: _constant_pad_nd,
}


def run(op: torch._ops.OpOverload, args: Sequence[Any], kwargs: Dict[str, Any]) -> Optional[Any]:
    """@p op's result from the device's fills and copies, or None when it
    has no such form (then it runs on the CPU)."""
    move = MOVES.get(op)
    tensors = [a for a in args if isinstance(a, torch.Tensor)]
    if move is None or not tensors or any(t.device.type != "neuron" or t.element_size() < 2
                                           for t in tensors):
        return None
    return move(*args, **kwargs)
