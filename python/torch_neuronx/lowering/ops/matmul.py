# SPDX-License-Identifier: MIT
"""Matrix products: aten.mm, bmm, addmm (nn.Linear) and baddbmm
(nn.MultiheadAttention's masked scores)."""

from __future__ import annotations

from typing import Any, List, Tuple

import torch

from ..context import Context
from ..registry import CAST_DTYPES, lowering
from ..values import Expanded, Masked, Tensor, Transposed
from .broadcast import materialised
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
    dtype = L.value(node).dtype
    if beta != 0 and not (beta == 1 and additive_causal(out, mask)) \
            and not isinstance(mask, Expanded) and dtype != torch.float32:
        # beta * mask + alpha * product in float32, rounded once, as
        # torch's CPU kernel (a product rounded to bfloat16 first loses it)
        a, b = (Transposed(_float(L, v.source)) if isinstance(v, Transposed)
                else _float(L, L.tensor(v, what))
                for v, what in ((L.arg(1), "batch1"), (L.arg(2), "batch2")))
        p = matrix_product(L, a, b, result=False)
        if alpha != 1:
            p = L.emit("mul", [p, float(alpha)], result=False, shape=out)
        m = _float(L, L.tensor(mask, "self"))
        if beta != 1:
            m = L.emit("mul", [m, float(beta)], result=False, shape=m.shape)
        L.bind(L.emit("cast", [L.emit("add", [p, m], result=False, shape=out)], result=False,
                      shape=out, dtype=dtype, flags=[f"dtype={CAST_DTYPES[dtype]}"]))
        return
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


# --- vectors and sums of products -----------------------------------------------------

def _float(L: Context, x: Tensor) -> Tensor:
    """@p x in float32: products of bfloat16 are exact there, and the
    result is rounded once at the end, as torch's CPU kernels round."""
    if x.dtype == torch.float32:
        return x
    return L.emit("cast", [x], result=False, shape=x.shape, dtype=torch.float32,
                  flags=["dtype=fp32"])


def _as(L: Context, x: Tensor, shape: Tuple[int, ...]) -> Tensor:
    if x.shape == shape:
        return x
    return L.emit("reshape", [x], result=False, shape=shape, dims=list(shape))


def _product(L: Context, a: Tensor, b: Tensor) -> Tensor:
    """a @ b of two float32 matrices."""
    return L.emit("matmul", [a, b], result=False, shape=(a.shape[0], b.shape[1]))


def _combined(L: Context, node: torch.fx.Node, h: Tensor, bias: Any) -> None:
    """beta * bias + alpha * h (beta = 0 ignores the bias, NaN or not),
    rounded once to the result's dtype."""
    beta, alpha = L.arg(3, "beta", 1), L.arg(4, "alpha", 1)
    out = L.out_shape() or ((1,) if L.scalar_results else ())
    h = _as(L, h, out)
    if alpha != 1:
        h = L.emit("mul", [h, float(alpha)], result=False, shape=out)
    if beta != 0:
        b = _float(L, L.tensor(bias, "self"))
        if b.shape != out:
            b = materialised(L, b, out)
        if beta != 1:
            b = L.emit("mul", [b, float(beta)], result=False, shape=out)
        h = L.emit("add", [b, h], result=False, shape=out)
    dtype = L.value(node).dtype
    L.bind(h if dtype == torch.float32 else
           L.emit("cast", [h], result=False, shape=out, dtype=dtype,
                  flags=[f"dtype={CAST_DTYPES[dtype]}"]))


def _vector_product(L: Context, m: Tensor, v: Tensor) -> Tensor:
    # [n, k] @ [k] as [n, k] @ [k, 1]
    return _product(L, _float(L, m), _as(L, _float(L, v), (v.shape[0], 1)))


@lowering(aten.mv.default, aten.dot.default, aten.vdot.default)
def mv(L: Context, node: torch.fx.Node) -> None:
    # mv: [n, k] @ [k]; dot and vdot (real): [1, k] @ [k]
    a, b = L.tensor(L.arg(0), "self"), L.tensor(L.arg(1), "other")
    if node.target != aten.mv.default:
        a = _as(L, a, (1, a.shape[0]))
    out = L.out_shape() or ((1,) if L.scalar_results else ())
    if not out:
        raise L.unsupported("a 0-dimensional result (the IR's values have rank >= 1)")
    h = _as(L, _vector_product(L, a, b), out)
    dtype = L.value(node).dtype
    L.bind(h if dtype == torch.float32 else
           L.emit("cast", [h], result=False, shape=out, dtype=dtype,
                  flags=[f"dtype={CAST_DTYPES[dtype]}"]))


@lowering(aten.addmv.default)
def addmv(L: Context, node: torch.fx.Node) -> None:
    # addmv(self, mat, vec, *, beta=1, alpha=1)
    m, v = L.tensor(L.arg(1), "mat"), L.tensor(L.arg(2), "vec")
    _combined(L, node, _vector_product(L, m, v), L.arg(0))


def _round(L: Context, x: Tensor, dtype: torch.dtype) -> Tensor:
    """@p x (float32) rounded to @p dtype and back: a step torch's CPU
    kernel computes in the operands' dtype."""
    if dtype == torch.float32:
        return x
    narrow = L.emit("cast", [x], result=False, shape=x.shape, dtype=dtype,
                    flags=[f"dtype={CAST_DTYPES[dtype]}"])
    return _float(L, narrow)


@lowering(aten.addr.default)
def addr(L: Context, node: torch.fx.Node) -> None:
    # addr(self, vec1, vec2, *, beta=1, alpha=1): beta * self + (alpha *
    # vec1) * vec2, each step rounded to the dtype as torch's CPU kernel
    # computes it (beta and alpha too); the outer product as [n, 1] @ [1, m]
    # (one exact product per element)
    a, b = L.tensor(L.arg(1), "vec1"), L.tensor(L.arg(2), "vec2")
    dtype = L.value(node).dtype
    beta, alpha = (float(torch.tensor(float(v), dtype=dtype))
                   for v in (L.arg(3, "beta", 1), L.arg(4, "alpha", 1)))
    out = L.out_shape()
    va = _as(L, _float(L, a), (a.shape[0], 1))
    if alpha != 1:
        va = _round(L, L.emit("mul", [va, alpha], result=False, shape=va.shape), dtype)
    h = _round(L, _product(L, va, _as(L, _float(L, b), (1, b.shape[0]))), dtype)
    if beta != 0:
        x = _float(L, L.tensor(L.arg(0), "self"))
        if x.shape != out:
            x = materialised(L, x, out)
        if beta != 1:
            x = _round(L, L.emit("mul", [x, beta], result=False, shape=out), dtype)
        h = L.emit("add", [x, h], result=False, shape=out)
    L.bind(h if dtype == torch.float32 else
           L.emit("cast", [h], result=False, shape=out, dtype=dtype,
                  flags=[f"dtype={CAST_DTYPES[dtype]}"]))


# Batches of addbmm in a reduced dtype: one product each.
_MAX_ADDBMM_BATCHES = 64


@lowering(aten.addbmm.default)
def addbmm(L: Context, node: torch.fx.Node) -> None:
    # addbmm(self, batch1, batch2, *, beta=1, alpha=1): beta * self plus
    # alpha times the sum over the batch of the products. In float32 one
    # product of [n, B k] and [B k, m]; in a reduced dtype, as torch's CPU
    # kernel, one addmm per batch (beta * self with the first), each
    # result rounded to the dtype.
    a, b = L.tensor(L.arg(1), "batch1"), L.tensor(L.arg(2), "batch2")
    batch, n, k = a.shape
    m = b.shape[2]
    dtype = L.value(node).dtype
    if dtype == torch.float32:
        rows = L.emit("transpose", [a], result=False, shape=(n, batch, k), dims=[1, 0, 2])
        h = _product(L, _as(L, rows, (n, batch * k)), _as(L, b, (batch * k, m)))
        _combined(L, node, h, L.arg(0))
        return
    if batch > _MAX_ADDBMM_BATCHES:
        raise L.unsupported(f"{batch} batches in {dtype} (one product each, at most "
                            f"{_MAX_ADDBMM_BATCHES})")
    beta, alpha = L.arg(3, "beta", 1), L.arg(4, "alpha", 1)
    out = L.out_shape()
    r: Any = None
    if beta != 0:
        r = _float(L, L.tensor(L.arg(0), "self"))
        if r.shape != out:
            r = materialised(L, r, out)
        if beta != 1:  # rounded with the first product
            r = L.emit("mul", [r, float(beta)], result=False, shape=out)
    pa = L.split(a, 0, [1] * batch) if batch > 1 else [a]
    pb = L.split(b, 0, [1] * batch) if batch > 1 else [b]
    for x, y in zip(pa, pb):
        h = _product(L, _float(L, _as(L, x, (n, k))), _float(L, _as(L, y, (k, m))))
        if alpha != 1:
            h = L.emit("mul", [h, float(alpha)], result=False, shape=out)
        r = _round(L, h if r is None else L.emit("add", [r, h], result=False, shape=out), dtype)
    L.bind(L.emit("cast", [r], result=False, shape=out, dtype=dtype,
                  flags=[f"dtype={CAST_DTYPES[dtype]}"]))
