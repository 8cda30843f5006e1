# SPDX-License-Identifier: MIT
"""Elementwise operators: arithmetic with tensors or literals (broadcast
over leading axes by the device) and the activations."""

from __future__ import annotations

from typing import Any, Callable, Optional, Tuple

import torch

from ..context import Context
from ..registry import CAST_DTYPES, FLOATS, FLOATS_AND_INT32, lowering
from ..values import Expanded, Masked, Tensor
from .broadcast import materialised, one_sided
from .masks import additive_causal, broadcast_binary

aten = torch.ops.aten


def _scaled(L: Context, v: Any, alpha: Any) -> Any:
    """alpha * v for add's and sub's alpha (a number, or an input)."""
    if isinstance(alpha, Tensor):
        return L.emit("mul", [v, alpha], shape=v.shape if isinstance(v, Tensor) else alpha.shape)
    if alpha == 1:
        return v
    if isinstance(v, float):
        return v * alpha
    return L.emit("mul", [v, float(alpha)], shape=v.shape)


def _binary(op: str, L: Context, a: Any, b: Any, alpha: Any = 1) -> None:
    if isinstance(a, Expanded) or isinstance(b, Expanded):
        if alpha != 1:
            raise L.unsupported(f"alpha={alpha!r} with an expanded operand")
        broadcast_binary(L, op, a, b)
        return
    x, y = L.operand(a, "self"), L.operand(b, "other")
    if not isinstance(x, Tensor) and not isinstance(y, Tensor):
        raise L.unsupported("arithmetic on numbers alone")
    x, y = one_sided(L, x, y)
    L.bind(L.emit(op, [x, _scaled(L, y, alpha)]))




@lowering(aten.add.Tensor, aten.add.Scalar, dtypes=FLOATS_AND_INT32)
def add(L: Context, node: torch.fx.Node) -> None:
    a, b, alpha = L.arg(0), L.arg(1), L.arg(2, "alpha", 1)
    # scores + a constant additive causal mask (nn.Transformer's
    # generate_square_subsequent_mask): the softmax after it is causal
    for x, m in ((a, b), (b, a)):
        if isinstance(x, Tensor) and alpha == 1 and x.shape == L.out_shape() \
                and additive_causal(L.out_shape(), m):
            L.bind(Masked(x))
            return
    _binary("add", L, a, b, alpha)


@lowering(aten.sub.Tensor, aten.sub.Scalar, dtypes=FLOATS_AND_INT32)
def sub(L: Context, node: torch.fx.Node) -> None:
    _binary("sub", L, L.arg(0), L.arg(1), L.arg(2, "alpha", 1))


@lowering(aten.rsub.Scalar, aten.rsub.Tensor, dtypes=FLOATS_AND_INT32)
def rsub(L: Context, node: torch.fx.Node) -> None:
    # other - alpha * self
    _binary("sub", L, L.arg(1), L.arg(0), L.arg(2, "alpha", 1))


@lowering(aten.mul.Tensor, aten.mul.Scalar, dtypes=FLOATS_AND_INT32)
def mul(L: Context, node: torch.fx.Node) -> None:
    _binary("mul", L, L.arg(0), L.arg(1))


@lowering(aten.div.Tensor, aten.div.Scalar)
def div(L: Context, node: torch.fx.Node) -> None:
    _binary("div", L, L.arg(0), L.arg(1))


@lowering(aten.lerp.Scalar, aten.lerp.Tensor, dtypes=FLOATS)
def lerp(L: Context, node: torch.fx.Node) -> None:
    # torch's two forms, each exact at its end of the interval, chosen by
    # the weight as its CPU kernel chooses: start + w * (end - start) for
    # |w| < 0.5, else end - (1 - w) * (end - start); in float32 with one
    # rounding to bfloat16 at the end, as torch computes bfloat16
    out = L.out_shape()

    def emit(op: str, *operands: Any, dtype: Optional[torch.dtype] = None,
             flags: Tuple[str, ...] = ()) -> Tensor:
        return L.emit(op, list(operands), result=False, shape=out, dtype=dtype, flags=flags)

    def cast(t: Tensor, dtype: torch.dtype) -> Tensor:
        return t if t.dtype == dtype else \
            emit("cast", t, dtype=dtype, flags=(f"dtype={CAST_DTYPES[dtype]}",))

    def operand(v: Any, what: str) -> Tensor:
        t = L.tensor(v, what)
        return cast(t if t.shape == out else materialised(L, t, out), torch.float32)

    start, end = operand(L.arg(0), "self"), operand(L.arg(1), "end")
    result_dtype = L.tensor(L.arg(0), "self").dtype
    diff = emit("sub", end, start)
    w = L.arg(2)
    if isinstance(w, (int, float)):
        r = emit("add", start, emit("mul", diff, float(w))) if abs(w) < 0.5 else \
            emit("sub", end, emit("mul", diff, 1.0 - w))
    else:
        w = operand(w, "weight")
        near_start = emit("lt", emit("abs", w), 0.5, dtype=torch.bool)
        r = emit("where", near_start, emit("add", start, emit("mul", diff, w)),
                 emit("sub", end, emit("mul", diff, emit("sub", 1.0, w))), dtype=torch.float32)
    L.bind(cast(r, result_dtype))


@lowering(aten.neg.default)
def neg(L: Context, node: torch.fx.Node) -> None:
    L.bind(L.emit("mul", [L.tensor(L.arg(0), "self"), -1.0]))


def _unary(op: str) -> Callable[[Context, torch.fx.Node], None]:
    def lower(L: Context, node: torch.fx.Node) -> None:
        L.bind(L.emit(op, [L.tensor(L.arg(0), "self")]))
    lower.__name__ = op
    return lower


for _target, _op in ((aten.relu.default, "relu"), (aten.silu.default, "silu"),
                     (aten.sigmoid.default, "sigmoid"), (aten.tanh.default, "tanh"),
                     (aten.exp.default, "exp"), (aten.log.default, "log"),
                     (aten.erf.default, "erf"), (aten.sqrt.default, "sqrt"),
                     (aten.rsqrt.default, "rsqrt"), (aten.reciprocal.default, "reciprocal"),
                     (aten.abs.default, "abs")):
    lowering(_target)(_unary(_op))


@lowering(aten.gelu.default)
def gelu(L: Context, node: torch.fx.Node) -> None:
    approximate = L.arg(1, "approximate", "none")
    ops = {"none": "gelu", "tanh": "gelu_tanh"}
    if approximate not in ops:
        raise L.unsupported(f"approximate={approximate!r}")
    L.bind(L.emit(ops[approximate], [L.tensor(L.arg(0), "self")]))


def _nan_kept(L: Context, r: Tensor, operands: Any) -> Tensor:
    """@p r, a maximum or minimum of @p operands, with their NaNs: the
    device's return the other operand of a NaN (hw/isa.md), torch's NaN."""
    for x in operands:
        if not isinstance(x, Tensor) or x.dtype not in FLOATS:
            continue
        if x.shape != r.shape:
            x = materialised(L, x, r.shape)
        nan = L.emit("ne", [x, x], result=False, shape=r.shape, dtype=torch.bool)
        r = L.emit("where", [nan, x, r], result=False, shape=r.shape, dtype=r.dtype)
    return r


def _extremum(op: str, L: Context, a: Any, b: Any) -> None:
    x, y = one_sided(L, L.operand(a, "self"), L.operand(b, "other"))
    if not isinstance(x, Tensor):
        x, y = y, x
    L.bind(_nan_kept(L, L.emit(op, [x, y]), [x, y]))


@lowering(aten.maximum.default, dtypes=FLOATS_AND_INT32)
def maximum(L: Context, node: torch.fx.Node) -> None:
    _extremum("maximum", L, L.arg(0), L.arg(1))


@lowering(aten.minimum.default, dtypes=FLOATS_AND_INT32)
def minimum(L: Context, node: torch.fx.Node) -> None:
    _extremum("minimum", L, L.arg(0), L.arg(1))


@lowering(aten.clamp.default, aten.clamp_min.default, aten.clamp_max.default,
          aten.clamp.Tensor, aten.clamp_min.Tensor, aten.clamp_max.Tensor,
          dtypes=FLOATS_AND_INT32)
def clamp(L: Context, node: torch.fx.Node) -> None:
    # a maximum with the lower bound, then a minimum with the upper one
    if node.target in (aten.clamp.default, aten.clamp.Tensor):
        lo, hi = L.arg(1, "min"), L.arg(2, "max")
    elif node.target in (aten.clamp_min.default, aten.clamp_min.Tensor):
        lo, hi = L.arg(1, "min"), None
    else:
        lo, hi = None, L.arg(1, "max")
    if lo is None and hi is None:
        raise L.unsupported("clamp without bounds")
    L.bind(clamped(L, L.tensor(L.arg(0), "self"), lo, hi))


def clamped(L: Context, v: Tensor, lo: Any, hi: Any) -> Tensor:
    """@p v clamped to [lo, hi] (numbers or tensors; None: no bound), NaN
    kept: a maximum with the lower bound, then a minimum with the upper
    one."""
    for op, bound in (("maximum", lo), ("minimum", hi)):
        if bound is None:
            continue
        if isinstance(bound, bool):
            raise L.unsupported("a bool bound")
        b = L.operand(bound, "a bound")
        shape = tuple(torch.broadcast_shapes(v.shape, b.shape)) if isinstance(b, Tensor) \
            else v.shape
        if isinstance(b, Tensor) and v.shape != shape and b.shape != shape:
            v = materialised(L, v, shape)
        v = _nan_kept(L, L.emit(op, [v, b], shape=shape), [v, b])
    return v


# x ** n for small integers n by multiplications (exact signs for negative
# x, as torch), x ** ±0.5 by a root, else e^(n ln x) (NaN for x < 0, as
# torch gives for an exponent that is not an integer).
_POW_ROOTS = {0.5: "sqrt", -0.5: "rsqrt"}


def _pow_scalar(L: Context, x: Tensor, n: float) -> Tensor:
    if n in _POW_ROOTS:
        return L.emit(_POW_ROOTS[n], [x])
    if n == int(n) and 1 <= abs(n) <= 4:
        v = x
        for _ in range(int(abs(n)) - 1):
            v = L.emit("mul", [v, x])
        return L.emit("reciprocal", [v]) if n < 0 else v
    if n == int(n):
        raise L.unsupported(f"the integer exponent {n:g} (the device lowers |n| <= 4; "
                            "e^(n ln x) would be NaN for negative x)")
    return L.emit("exp", [L.emit("mul", [L.emit("log", [x]), n])])


@lowering(aten.pow.Tensor_Scalar)
def pow_scalar(L: Context, node: torch.fx.Node) -> None:
    n = L.arg(1, "exponent")
    if not isinstance(n, (int, float)) or isinstance(n, bool):
        raise L.unsupported(f"a {type(n).__name__} exponent")
    x = L.tensor(L.arg(0), "self")
    if float(n) == 1.0:
        L.bind(L.emit("mul", [x, 1.0]))
        return
    if float(n) == 0.0:
        raise L.unsupported("the exponent 0 (a constant result)")
    L.bind(_pow_scalar(L, x, float(n)))


@lowering(aten.pow.Tensor_Tensor)
def pow_tensor(L: Context, node: torch.fx.Node) -> None:
    # e^(y ln x): x > 0 (NaN for a negative base, where torch gives a
    # number for an integer exponent)
    x, y = L.tensor(L.arg(0), "self"), L.tensor(L.arg(1), "exponent")
    if x.shape != y.shape:
        raise L.unsupported("a base and an exponent of different shapes")
    L.bind(L.emit("exp", [L.emit("mul", [L.emit("log", [x], shape=x.shape), y])]))
