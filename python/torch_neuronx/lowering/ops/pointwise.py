# SPDX-License-Identifier: MIT
"""Elementwise computations made of several IR operators (the activations
and functions the ISA has no instruction for): built in float32 from
operands broadcast to the result's shape, the result rounded once to its
dtype, as torch's CPU kernels compute bfloat16 and float16 (in float,
rounded at the end). Shared by activations.py and functions.py, with the
accurate compositions they use (log1p, expm1)."""

from __future__ import annotations

import math
from typing import Any, Optional, Sequence, Tuple, Union

import torch

from ..context import Context
from ..registry import CAST_DTYPES
from ..values import Tensor
from .broadcast import materialised

Operand = Union[Tensor, float]

LN2 = math.log(2.0)


class Pointwise:
    """The IR of one elementwise result of shape @p shape (the node's by
    default), every intermediate value in float32."""

    def __init__(self, L: Context, shape: Optional[Sequence[int]] = None) -> None:
        self.L = L
        self.shape: Tuple[int, ...] = tuple(L.out_shape() if shape is None else shape)

    # --- operands ------------------------------------------------------------
    def input(self, v: Any, what: str) -> Tensor:
        """A tensor operand of the node, broadcast to the result's shape,
        in float32."""
        t = self.L.tensor(v, what)
        if t.shape != self.shape:
            t = materialised(self.L, t, self.shape)
        return self.cast(t, torch.float32)

    def operand(self, v: Any, what: str) -> Operand:
        """A tensor operand as input(), or a number as the literal it is."""
        o = self.L.operand(v, what)
        return o if isinstance(o, float) else self.input(o, what)

    def cast(self, t: Tensor, dtype: torch.dtype) -> Tensor:
        if t.dtype == dtype:
            return t
        return self.L.emit("cast", [t], result=False, shape=t.shape, dtype=dtype,
                           flags=[f"dtype={CAST_DTYPES[dtype]}"])

    # --- operators -----------------------------------------------------------
    def __call__(self, op: str, *operands: Operand) -> Tensor:
        """IR operator @p op of float32 operands (one may be a literal)."""
        return self.L.emit(op, list(operands), result=False, shape=self.shape,
                           dtype=torch.float32)

    def mask(self, op: str, a: Tensor, b: Operand) -> Tensor:
        """The comparison @p op of @p a and @p b: a u8 mask (torch.bool)."""
        return self.L.emit(op, [a, b], result=False, shape=self.shape, dtype=torch.bool)

    def as_float(self, m: Tensor) -> Tensor:
        """A mask as float32 0 and 1."""
        return self.cast(m, torch.float32)

    def where(self, cond: Tensor, a: Tensor, b: Operand) -> Tensor:
        """@p a where @p cond holds, else @p b (a tensor or a number)."""
        return self.L.emit("where", [cond, a, b], result=False, shape=self.shape,
                           dtype=torch.float32)

    def keep_nan(self, x: Tensor, r: Tensor) -> Tensor:
        """@p r, NaN where @p x is (the device's maximum and minimum return
        the other operand of a NaN, a comparison with NaN is false)."""
        return self.where(self.mask("eq", x, x), r, x)

    def polynomial(self, x: Tensor, coefficients: Sequence[float]) -> Tensor:
        """c0 + c1 x + c2 x^2 + ... by Horner's rule (every step rounded
        once in float32)."""
        r: Operand = coefficients[-1]
        for c in reversed(coefficients[:-1]):
            r = self("mul", x, r) if isinstance(r, Tensor) else self("mul", x, float(r))
            r = self("add", r, float(c)) if c != 0 else r
        assert isinstance(r, Tensor)
        return r

    # --- accurate compositions -----------------------------------------------
    def log1p(self, x: Tensor) -> Tensor:
        """ln(1 + x) to a few ulp near 0 too: with u = 1 + x rounded,
        ln(u) * x / (u - 1), the quotient undoing u's rounding (Goldberg,
        "What every computer scientist should know about floating-point
        arithmetic", theorem 4); x itself where u rounds to 1; +inf at +inf
        (the quotient would be inf / inf)."""
        u = self("add", x, 1.0)
        d = self("sub", u, 1.0)
        r = self("mul", self("log", u), self("div", x, d))
        r = self.where(self.mask("ne", d, 0.0), r, x)
        return self.where(self.mask("ne", x, math.inf), r, x)

    # e^x - 1 = x + x^2/2! + ... : below |x| = 1 the terms past x^13/13!
    # are under 2^-32 of the sum; at and above it e^x - 1 loses at most a
    # factor e / (e - 1) = 1.58 of exp's own relative error.
    _EXPM1_SERIES = (0.0,) + tuple(1.0 / math.factorial(n) for n in range(1, 14))

    def expm1(self, x: Tensor) -> Tensor:
        """e^x - 1, by its series below |x| = 1 (no cancellation near 0),
        else by exp."""
        series = self.polynomial(x, self._EXPM1_SERIES)
        direct = self("sub", self("exp", x), 1.0)
        return self.where(self.mask("lt", self("abs", x), 1.0), series, direct)

    def rounded(self, t: Tensor, dtype: torch.dtype) -> Tensor:
        """@p t rounded to @p dtype and back to float32: an intermediate
        value that torch's CPU kernel computes in the operands' dtype."""
        return t if dtype == torch.float32 else self.cast(self.cast(t, dtype), torch.float32)

    # --- the result ----------------------------------------------------------
    def result(self, r: Tensor, dtype: torch.dtype) -> Tensor:
        """@p r rounded once to @p dtype."""
        return self.cast(r, dtype)


def unary(L: Context, what: str = "self") -> Tuple[Pointwise, Tensor, torch.dtype]:
    """The builder of a node's elementwise result, its first operand in
    float32, and the dtype the result has."""
    P = Pointwise(L)
    x = L.tensor(L.arg(0), what)
    return P, P.input(x, what), x.dtype
