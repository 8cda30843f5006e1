# SPDX-License-Identifier: MIT
"""Matrix products: aten.mm, bmm, addmm (nn.Linear) and baddbmm
(nn.MultiheadAttention's masked scores)."""

from __future__ import annotations

from typing import Any, List, Tuple

import torch

from ..context import Context
from ..registry import lowering
from ..values import Expanded, Masked, Tensor, Transposed
from .masks import additive_causal, broadcast_binary, check_mask_shape, shape_of

aten = torch.ops.aten


def matrix_product(L: Context, a: Any, b: Any, *, result: bool = True) -> Tensor:
    """a @ b, a transposed operand taken as the matmul's transpose flag."""
    flags: List[str] = []
    operands: List[Tensor] = []
    for v, flag, what in ((a, "transpose_a", "self"), (b, "transpose_b", "mat2")):
        if isinstance(v, Transposed):
            flags.append(flag)
            operands.append(v.source)
        else:
            operands.append(L.tensor(v, what))
    if any(len(o.shape) < 2 for o in operands):
        raise L.unsupported("a 1-dimensional operand (the device's matmul takes rank >= 2)")
    shape: Tuple[int, ...] = L.out_shape()
    return L.emit("matmul", operands, flags=flags, shape=shape, result=result)


@lowering(aten.mm.default, aten.bmm.default)
def mm(L: Context, node: torch.fx.Node) -> None:
    L.bind(matrix_product(L, L.arg(0), L.arg(1)))


@lowering(aten.addmm.default)
def addmm(L: Context, node: torch.fx.Node) -> None:
    # beta * bias + alpha * (a @ b): nn.Linear's bias and product
    bias = L.arg(0)
    beta, alpha = L.arg(3, "beta", 1), L.arg(4, "alpha", 1)
    h = matrix_product(L, L.arg(1), L.arg(2))
    if alpha != 1:
        h = L.emit("mul", [h, float(alpha)])
    if beta == 0:
        L.bind(h)
        return
    b = L.tensor(bias, "bias")
    if beta != 1:
        b = L.emit("mul", [b, float(beta)], shape=b.shape)
    L.bind(L.emit("add", [h, b]))


@lowering(aten.baddbmm.default)
def baddbmm(L: Context, node: torch.fx.Node) -> None:
    # beta * mask + alpha * (batch1 @ batch2): nn.MultiheadAttention's
    # scores with an attention mask
    mask, beta, alpha = L.arg(0), L.arg(3, "beta", 1), L.arg(4, "alpha", 1)
    out = L.out_shape()
    mask_shape = shape_of(mask)
    if beta != 0 and mask_shape is not None:
        check_mask_shape(L, mask_shape, out, "the mask (baddbmm's self)")
    h = matrix_product(L, L.arg(1), L.arg(2))
    if alpha != 1:
        h = L.emit("mul", [h, float(alpha)])
    if beta == 0:
        L.bind(h)
    elif beta == 1 and additive_causal(out, mask):
        L.bind(Masked(h))
    elif isinstance(mask, Expanded):
        if beta != 1:
            raise L.unsupported(f"beta={beta!r} with an expanded mask")
        broadcast_binary(L, "add", h, mask)
    else:
        m = L.tensor(mask, "self")
        if beta != 1:
            m = L.emit("mul", [m, float(beta)], shape=m.shape)
        L.bind(L.emit("add", [h, m]))
