# SPDX-License-Identifier: MIT
"""Elementwise functions composed of the ISA's: logarithms and
exponentials of other bases and near 0, hyperbolic functions, rounding,
sign tests, logical operators and the fused multiply-adds, each as torch's
CPU kernel defines it (NaNs, infinities and signed limits included), in
float32 (pointwise.Pointwise)."""

from __future__ import annotations

import math
from typing import Callable

import torch

from ..context import Context
from ..registry import lowering
from ..values import Tensor
from .broadcast import one_sided
from .pointwise import LN2, Pointwise, unary

aten = torch.ops.aten

# Every float32 of at least this magnitude is an integer.
_INTEGRAL = float(2 ** 23)
# Above this magnitude 1 + x^2 is x^2 in float32 (and x^2 stays finite):
# asinh(x) and acosh(x) are ln(2x) to within an ulp.
_LARGE = 1e10


def _unary(fn: Callable[[Pointwise, Tensor], Tensor]) -> Callable[[Context, torch.fx.Node], None]:
    def lower(L: Context, node: torch.fx.Node) -> None:
        P, x, dtype = unary(L)
        L.bind(P.result(fn(P, x), dtype))
    lower.__name__ = fn.__name__
    return lower


# --- logarithms and exponentials ---------------------------------------------

@lowering(aten.log1p.default)
def log1p(L: Context, node: torch.fx.Node) -> None:
    _unary(lambda P, x: P.log1p(x))(L, node)


@lowering(aten.expm1.default)
def expm1(L: Context, node: torch.fx.Node) -> None:
    _unary(lambda P, x: P.expm1(x))(L, node)


@lowering(aten.log2.default, aten.log10.default)
def log_base(L: Context, node: torch.fx.Node) -> None:
    # ln(x) / ln(base): the ISA's ln within an ulp, times a constant
    base = 2.0 if node.target == aten.log2.default else 10.0
    _unary(lambda P, x: P("mul", P("log", x), 1.0 / math.log(base)))(L, node)


@lowering(aten.exp2.default)
def exp2(L: Context, node: torch.fx.Node) -> None:
    # e^(x ln 2): x ln 2 rounded moves the result by at most |x| 2^-24 of
    # itself (|x| < 150 where it is finite and not 0)
    _unary(lambda P, x: P("exp", P("mul", x, LN2)))(L, node)


# --- hyperbolic functions -----------------------------------------------------

def _half_exp(P: Pointwise, a: Tensor) -> Tensor:
    # e^a / 2 without overflowing where e^a does and e^a / 2 does not
    return P("exp", P("sub", a, LN2))


@lowering(aten.cosh.default)
def cosh(L: Context, node: torch.fx.Node) -> None:
    # (e^|x| + e^-|x|) / 2, no cancellation; e^|x| / 2 from |x| = 80 on
    def f(P: Pointwise, x: Tensor) -> Tensor:
        a = P("abs", x)
        e = P("exp", a)
        small = P("mul", P("add", e, P("reciprocal", e)), 0.5)
        return P.where(P.mask("lt", a, 80.0), small, _half_exp(P, a))
    _unary(f)(L, node)


@lowering(aten.sinh.default)
def sinh(L: Context, node: torch.fx.Node) -> None:
    # sign(x) (m + m / (m + 1)) / 2 with m = expm1(|x|) (e^a - e^-a without
    # cancellation near 0); e^|x| / 2 from |x| = 80 on
    def f(P: Pointwise, x: Tensor) -> Tensor:
        a = P("abs", x)
        m = P.expm1(a)
        small = P("mul", P("add", m, P("div", m, P("add", m, 1.0))), 0.5)
        r = P.where(P.mask("lt", a, 80.0), small, _half_exp(P, a))
        return P.where(P.mask("lt", x, 0.0), P("mul", r, -1.0), r)
    _unary(f)(L, node)


@lowering(aten.asinh.default)
def asinh(L: Context, node: torch.fx.Node) -> None:
    # sign(x) log1p(a + a^2 / (1 + sqrt(1 + a^2))) with a = |x| (the
    # argument of log1p without cancellation); ln(a) + ln 2 for large a
    def f(P: Pointwise, x: Tensor) -> Tensor:
        a = P("abs", x)
        a2 = P("mul", a, a)
        t = P("add", a, P("div", a2, P("add", P("sqrt", P("add", a2, 1.0)), 1.0)))
        r = P.where(P.mask("lt", a, _LARGE), P.log1p(t), P("add", P("log", a), LN2))
        return P.where(P.mask("lt", x, 0.0), P("mul", r, -1.0), r)
    _unary(f)(L, node)


@lowering(aten.acosh.default)
def acosh(L: Context, node: torch.fx.Node) -> None:
    # log1p(t + sqrt(t (t + 2))) with t = x - 1 (exact near 1); ln(x) +
    # ln 2 for large x; NaN below 1
    def f(P: Pointwise, x: Tensor) -> Tensor:
        t = P("sub", x, 1.0)
        small = P.log1p(P("add", t, P("sqrt", P("mul", t, P("add", t, 2.0)))))
        r = P.where(P.mask("lt", x, _LARGE), small, P("add", P("log", x), LN2))
        return P.where(P.mask("ge", x, 1.0), r, math.nan)
    _unary(f)(L, node)


@lowering(aten.atanh.default)
def atanh(L: Context, node: torch.fx.Node) -> None:
    # log1p(2x / (1 - x)) / 2
    _unary(lambda P, x: P("mul", P.log1p(P("div", P("mul", x, 2.0), P("sub", 1.0, x))),
                          0.5))(L, node)


@lowering(aten.logit.default)
def logit(L: Context, node: torch.fx.Node) -> None:
    # logit(self, eps=None): ln(z / (1 - z)), z = x < eps ? eps : (x > 1 -
    # eps ? 1 - eps : x); torch's CPU kernel computes eps, 1 - z and the
    # quotient in the tensor's dtype
    P, x, dtype = unary(L)
    eps = L.arg(1, "eps")
    z = x
    if eps is not None:
        lo = float(torch.tensor(float(eps), dtype=dtype))
        hi = float(torch.tensor(1.0, dtype=dtype) - torch.tensor(lo, dtype=dtype))
        z = P.where(P.mask("ge", x, lo), P.where(P.mask("le", x, hi), x, hi), lo)
        z = P.keep_nan(x, z)
    q = P.rounded(P("div", z, P.rounded(P("sub", 1.0, z), dtype)), dtype)
    L.bind(P.result(P("log", q), dtype))


# --- functions of two operands ------------------------------------------------

def _xlog(L: Context, node: torch.fx.Node, log: Callable[[Pointwise, Tensor], Tensor],
          log_of: Callable[[float], float]) -> None:
    # NaN where y is; 0 where x is 0; else x * log(y). Either may be a number.
    P = Pointwise(L)
    x, y = P.operand(L.arg(0), "self"), P.operand(L.arg(1), "other")
    if isinstance(y, float):
        if not isinstance(x, Tensor):
            raise L.unsupported("two numbers")
        if math.isnan(y):
            raise L.unsupported("a NaN y (a constant result)")
        r = P.where(P.mask("ne", x, 0.0), P("mul", x, log_of(y)), 0.0)
    elif isinstance(x, float):
        # 0 * log(y) is 0 unless y is NaN
        r = P.where(P.mask("ne", y, y), y, 0.0) if x == 0 else P("mul", log(P, y), x)
    else:
        r = P.where(P.mask("ne", x, 0.0), P("mul", x, log(P, y)), 0.0)
        r = P.where(P.mask("eq", y, y), r, math.nan)
    L.bind(P.result(r, L.value(node).dtype))


def _ln(y: float) -> float:
    return math.log(y) if y > 0 else (-math.inf if y == 0 else math.nan)


def _ln1p(y: float) -> float:
    return math.log1p(y) if y > -1 else (-math.inf if y == -1 else math.nan)


@lowering(aten.xlogy.Tensor, aten.xlogy.Scalar_Self, aten.xlogy.Scalar_Other)
def xlogy(L: Context, node: torch.fx.Node) -> None:
    _xlog(L, node, lambda P, y: P("log", y), _ln)


@lowering(aten.special_xlog1py.default, aten.special_xlog1py.self_scalar,
          aten.special_xlog1py.other_scalar)
def xlog1py(L: Context, node: torch.fx.Node) -> None:
    _xlog(L, node, lambda P, y: P.log1p(y), _ln1p)


@lowering(aten.special_entr.default)
def entr(L: Context, node: torch.fx.Node) -> None:
    # -x ln x for x > 0, 0 at 0, -inf below, NaN for NaN
    def f(P: Pointwise, x: Tensor) -> Tensor:
        at_zero = P.where(P.mask("eq", x, 0.0), P("mul", x, 0.0), -math.inf)
        r = P.where(P.mask("gt", x, 0.0), P("mul", P("mul", x, P("log", x)), -1.0), at_zero)
        return P.keep_nan(x, r)
    _unary(f)(L, node)


@lowering(aten.logaddexp.default, aten.logaddexp2.default)
def logaddexp(L: Context, node: torch.fx.Node) -> None:
    # max(a, b) + log1p(e^-|a - b|) (base 2: log1p(2^-|a - b|) / ln 2);
    # a where a and b are the same infinity
    P = Pointwise(L)
    a, b = P.input(L.arg(0), "self"), P.input(L.arg(1), "other")
    d = P("mul", P("abs", P("sub", a, b)), -1.0)
    if node.target == aten.logaddexp.default:
        tail = P.log1p(P("exp", d))
    else:
        tail = P("mul", P.log1p(P("exp", P("mul", d, LN2))), 1.0 / LN2)
    r = P("add", P("maximum", a, b), tail)
    same = P.where(P.mask("eq", a, b), a, r)
    L.bind(P.result(P.where(P.mask("eq", P("abs", a), math.inf), same, r),
                    L.value(node).dtype))


@lowering(aten.fmax.default, aten.fmin.default)
def fmax_fmin(L: Context, node: torch.fx.Node) -> None:
    # the device's maximum and minimum: the other operand of a NaN, as fmax
    x, y = one_sided(L, L.tensor(L.arg(0), "self"), L.tensor(L.arg(1), "other"))
    L.bind(L.emit("maximum" if node.target == aten.fmax.default else "minimum", [x, y]))


@lowering(aten.deg2rad.default, aten.rad2deg.default)
def deg2rad(L: Context, node: torch.fx.Node) -> None:
    factor = math.pi / 180 if node.target == aten.deg2rad.default else 180 / math.pi
    L.bind(L.emit("mul", [L.tensor(L.arg(0), "self"), factor]))


@lowering(aten.heaviside.default)
def heaviside(L: Context, node: torch.fx.Node) -> None:
    # x == 0 ? values : (x > 0) (NaN gives 0)
    P = Pointwise(L)
    x, v = P.input(L.arg(0), "self"), P.input(L.arg(1), "values")
    r = P.where(P.mask("eq", x, 0.0), v, P.as_float(P.mask("gt", x, 0.0)))
    L.bind(P.result(r, L.value(node).dtype))


# --- rounding -----------------------------------------------------------------

def _truncated(P: Pointwise, x: Tensor) -> Tensor:
    # toward zero through int32 below 2^23 (above it x is an integer, or
    # an infinity or NaN: itself)
    t = P.cast(P.cast(x, torch.int32), torch.float32)
    return P.where(P.mask("lt", P("abs", x), _INTEGRAL), t, x)


def _rounded(P: Pointwise, x: Tensor) -> Tensor:
    # to nearest, ties to even: x + 2^23 - 2^23 (x - 2^23 + 2^23 below 0)
    # rounds x to an integer in float32's arithmetic
    up = P("sub", P("add", x, _INTEGRAL), _INTEGRAL)
    down = P("add", P("sub", x, _INTEGRAL), _INTEGRAL)
    r = P.where(P.mask("ge", x, 0.0), up, down)
    return P.where(P.mask("lt", P("abs", x), _INTEGRAL), r, x)


@lowering(aten.trunc.default)
def trunc(L: Context, node: torch.fx.Node) -> None:
    _unary(_truncated)(L, node)


@lowering(aten.floor.default)
def floor(L: Context, node: torch.fx.Node) -> None:
    def f(P: Pointwise, x: Tensor) -> Tensor:
        t = _truncated(P, x)
        return P.where(P.mask("gt", t, x), P("sub", t, 1.0), t)
    _unary(f)(L, node)


@lowering(aten.ceil.default)
def ceil(L: Context, node: torch.fx.Node) -> None:
    def f(P: Pointwise, x: Tensor) -> Tensor:
        t = _truncated(P, x)
        return P.where(P.mask("lt", t, x), P("add", t, 1.0), t)
    _unary(f)(L, node)


@lowering(aten.frac.default)
def frac(L: Context, node: torch.fx.Node) -> None:
    _unary(lambda P, x: P("sub", x, _truncated(P, x)))(L, node)


@lowering(aten.round.default, aten.round.decimals)
def round_(L: Context, node: torch.fx.Node) -> None:
    # round(self, *, decimals=0): with decimals d, x * 10^d rounded, then
    # divided by 10^d (d < 0: x / 10^-d rounded, times 10^-d), as torch
    decimals = int(L.arg(None, "decimals", 0) or 0)
    scale = float(10.0 ** abs(decimals))

    def f(P: Pointwise, x: Tensor) -> Tensor:
        if decimals == 0:
            return _rounded(P, x)
        if decimals > 0:
            return P("div", _rounded(P, P("mul", x, scale)), scale)
        return P("mul", _rounded(P, P("div", x, scale)), scale)
    _unary(f)(L, node)


# --- trigonometric functions -----------------------------------------------------

# pi/2 in three parts (Cody and Waite; the constants of Cephes' sinf): the
# first of 8 significant bits and the second of 11, so that k times each
# is exact for |k| < 2^13, and x - k pi/2 loses nothing to cancellation
# for |x| up to about 12868.
_PIO2_PARTS = (1.5703125, 4.837512969970703125e-4, 7.54978995489188216e-8)
# Cephes' sinf and cosf polynomials on [-pi/4, pi/4], in z = r^2:
# sin r = r + r z S(z), cos r = 1 - z / 2 + z^2 C(z).
_SIN_COEFFICIENTS = (-1.6666654611e-1, 8.3321608736e-3, -1.9515295891e-4)
_COS_COEFFICIENTS = (4.166664568298827e-2, -1.388731625493765e-3, 2.443315711809948e-5)


def _sin_or_cos(P: Pointwise, x: Tensor, quarter_turns: int) -> Tensor:
    """sin(x + quarter_turns * pi / 2): x = k pi/2 + r with k the nearest
    integer to x 2/pi and |r| <= pi/4, then sin r or cos r by k mod 4 (NaN
    for infinities and NaNs, as k is)."""
    k = _rounded(P, P("mul", x, 2.0 / math.pi))
    r = x
    for part in _PIO2_PARTS:
        r = P("sub", r, P("mul", k, part))
    # k mod 4, from floor(k / 4) = round(k / 4 - 3/8) (k / 4 is exact)
    q = P("sub", k, P("mul", _rounded(P, P("sub", P("mul", k, 0.25), 0.375)), 4.0))
    z = P("mul", r, r)
    s = P("add", r, P("mul", P("mul", r, z), P.polynomial(z, _SIN_COEFFICIENTS)))
    c = P("add", P("sub", 1.0, P("mul", z, 0.5)),
          P("mul", P("mul", z, z), P.polynomial(z, _COS_COEFFICIENTS)))
    turns = [s, c, P("mul", s, -1.0), P("mul", c, -1.0)]
    turns = turns[quarter_turns:] + turns[:quarter_turns]
    return P.where(P.mask("eq", q, 0.0), turns[0],
                   P.where(P.mask("eq", q, 1.0), turns[1],
                           P.where(P.mask("eq", q, 2.0), turns[2], turns[3])))


@lowering(aten.sin.default)
def sin(L: Context, node: torch.fx.Node) -> None:
    # (sin -0 is -0)
    _unary(lambda P, x: P.where(P.mask("eq", x, 0.0), x, _sin_or_cos(P, x, 0)))(L, node)


@lowering(aten.cos.default)
def cos(L: Context, node: torch.fx.Node) -> None:
    _unary(lambda P, x: _sin_or_cos(P, x, 1))(L, node)


# --- signs and tests ------------------------------------------------------------

@lowering(aten.sign.default, aten.sgn.default)
def sign(L: Context, node: torch.fx.Node) -> None:
    # (x > 0) - (x < 0): NaN gives 0, as torch's CPU kernel
    _unary(lambda P, x: P("sub", P.as_float(P.mask("gt", x, 0.0)),
                          P.as_float(P.mask("lt", x, 0.0))))(L, node)


def _test(op: str, value: float, absolute: bool = False
          ) -> Callable[[Context, torch.fx.Node], None]:
    def lower(L: Context, node: torch.fx.Node) -> None:
        x = L.tensor(L.arg(0), "self")
        if absolute:
            x = L.emit("abs", [x], result=False, shape=x.shape)
        L.bind(L.emit(op, [x, x if math.isnan(value) else value], dtype=torch.bool))
    return lower


lowering(aten.isnan.default)(_test("ne", math.nan))            # x != x
lowering(aten.isinf.default)(_test("eq", math.inf, absolute=True))
lowering(aten.isposinf.default)(_test("eq", math.inf))
lowering(aten.isneginf.default)(_test("eq", -math.inf))


@lowering(aten.nan_to_num.default)
def nan_to_num(L: Context, node: torch.fx.Node) -> None:
    # nan_to_num(self, nan=0, posinf=None, neginf=None): the dtype's
    # largest and smallest values by default (selections: exact in any dtype)
    x = L.tensor(L.arg(0), "self")
    info = torch.finfo(x.dtype)
    nan = float(L.arg(1, "nan", 0.0) or 0.0)
    posinf, neginf = L.arg(2, "posinf"), L.arg(3, "neginf")
    posinf = float(info.max) if posinf is None else float(posinf)
    neginf = float(info.min) if neginf is None else float(neginf)

    def select(cond_op: str, v: Tensor, other: float, fill: float) -> Tensor:
        c = L.emit(cond_op, [v, other if not math.isnan(other) else v], result=False,
                   shape=x.shape, dtype=torch.bool)
        return L.emit("where", [c, v, fill], result=False, shape=x.shape, dtype=x.dtype)
    r = select("eq", x, math.nan, nan)  # x == x: not NaN
    r = select("ne", r, math.inf, posinf)
    L.bind(select("ne", r, -math.inf, neginf))


# --- logical operators (bool results) -------------------------------------------

@lowering(aten.logical_not.default)
def logical_not(L: Context, node: torch.fx.Node) -> None:
    # (a bool operand as float32 0 and 1: the device compares numbers)
    L.bind(L.emit("eq", [Pointwise(L).input(L.arg(0), "self"), 0.0], dtype=torch.bool))


@lowering(aten.bitwise_not.default)
def bitwise_not(L: Context, node: torch.fx.Node) -> None:
    # of a bool tensor (`~mask`) it is logical_not; an integer's bits are
    # not what the device computes with
    if L.value(node).dtype != torch.bool:
        raise L.unsupported(f"bitwise_not of {L.value(node).dtype} (the device negates bool "
                            "tensors)")
    logical_not(L, node)


@lowering(aten.logical_and.default, aten.logical_or.default, aten.logical_xor.default)
def logical(L: Context, node: torch.fx.Node) -> None:
    # each operand != 0 as 0 or 1: and is their product, or their sum,
    # xor their difference, != 0
    P = Pointwise(L)
    a, b = (P.as_float(P.mask("ne", P.input(L.arg(i), what), 0.0))
            for i, what in ((0, "self"), (1, "other")))
    op = {aten.logical_and.default: "mul", aten.logical_or.default: "add",
          aten.logical_xor.default: "sub"}[node.target]
    L.bind(L.emit("ne", [P(op, a, b), 0.0], dtype=torch.bool))


# --- fused multiply-adds ----------------------------------------------------------

@lowering(aten.addcmul.default, aten.addcdiv.default)
def addcmul(L: Context, node: torch.fx.Node) -> None:
    # self + value * t1 * t2, self + value * t1 / t2: (value * t1) first,
    # as torch's CPU kernels
    P = Pointwise(L)
    x, t1, t2 = (P.input(L.arg(i), what) for i, what in ((0, "self"), (1, "tensor1"),
                                                          (2, "tensor2")))
    value = L.arg(3, "value", 1.0)
    if isinstance(value, Tensor):  # an input
        scaled = P("mul", t1, value)
    else:
        value = float(value)
        scaled = t1 if value == 1 else P("mul", t1, value)
    op = "mul" if node.target == aten.addcmul.default else "div"
    L.bind(P.result(P("add", x, P(op, scaled, t2)), L.value(node).dtype))


@lowering(aten.hypot.default)
def hypot(L: Context, node: torch.fx.Node) -> None:
    # m sqrt(1 + (n / m)^2), m and n the larger and smaller of |a| and |b|
    # (no overflow where a^2 would); 0 where both are 0, NaN where either
    # is, inf where either is infinite (NaN or not), as C's hypot
    P = Pointwise(L)
    a, b = (P("abs", P.input(L.arg(i), what)) for i, what in ((0, "self"), (1, "other")))
    m, n = P("maximum", a, b), P("minimum", a, b)
    q = P("div", n, m)
    r = P("mul", m, P("sqrt", P("add", P("mul", q, q), 1.0)))
    r = P.where(P.mask("ne", m, 0.0), r, 0.0)
    r = P.keep_nan(b, P.keep_nan(a, r))
    for t in (a, b):
        r = P.where(P.mask("ne", t, math.inf), r, math.inf)
    L.bind(P.result(r, L.value(node).dtype))


@lowering(aten.linalg_cross.default)
def linalg_cross(L: Context, node: torch.fx.Node) -> None:
    # linalg_cross(self, other, dim=-1): (a1 b2 - a2 b1, a2 b0 - a0 b2,
    # a0 b1 - a1 b0) along dim, each product and difference rounded to the
    # dtype as torch's CPU kernel computes them
    out = L.out_shape()
    dtype = L.value(node).dtype
    axis = L.arg(2, "dim", -1)
    axis = axis + len(out) if axis < 0 else axis
    piece = out[:axis] + (1,) + out[axis + 1:]
    full = Pointwise(L)
    a, b = (L.split(full.input(L.arg(i), what), axis, [1, 1, 1])
            for i, what in ((0, "self"), (1, "other")))
    P = Pointwise(L, piece)
    parts = []
    for i, j in ((1, 2), (2, 0), (0, 1)):
        left = P.rounded(P("mul", a[i], b[j]), dtype)
        right = P.rounded(P("mul", a[j], b[i]), dtype)
        parts.append(P.result(P("sub", left, right), dtype))
    L.bind(L.emit("concat", parts, axis=axis))
