# SPDX-License-Identifier: MIT
"""The activations the ISA has no function for, composed as torch's CPU
kernels define them (their NaNs and infinities included), in float32
(pointwise.Pointwise)."""

from __future__ import annotations

from typing import Tuple

import torch

from ..context import Context
from ..registry import lowering
from ..values import Tensor
from .elementwise import clamped
from .pointwise import Pointwise, unary

aten = torch.ops.aten


@lowering(aten.hardtanh.default)
def hardtanh(L: Context, node: torch.fx.Node) -> None:
    # hardtanh(self, min_val=-1, max_val=1): a clamp
    lo, hi = L.arg(1, "min_val", -1.0), L.arg(2, "max_val", 1.0)
    L.bind(clamped(L, L.tensor(L.arg(0), "self"), float(lo), float(hi)))


def _relu6_of_shifted(P: Pointwise, x: Tensor) -> Tensor:
    # min(max(x + 3, 0), 6), NaN kept
    return P.keep_nan(x, P("minimum", P("maximum", P("add", x, 3.0), 0.0), 6.0))


@lowering(aten.hardsigmoid.default)
def hardsigmoid(L: Context, node: torch.fx.Node) -> None:
    # min(max(x + 3, 0), 6) / 6
    P, x, dtype = unary(L)
    L.bind(P.result(P("div", _relu6_of_shifted(P, x), 6.0), dtype))


@lowering(aten.hardswish.default)
def hardswish(L: Context, node: torch.fx.Node) -> None:
    # x * min(max(x + 3, 0), 6) / 6
    P, x, dtype = unary(L)
    L.bind(P.result(P("div", P("mul", x, _relu6_of_shifted(P, x)), 6.0), dtype))


@lowering(aten.leaky_relu.default)
def leaky_relu(L: Context, node: torch.fx.Node) -> None:
    # x > 0 ? x : x * negative_slope
    P, x, dtype = unary(L)
    slope = float(L.arg(1, "negative_slope", 0.01))
    L.bind(P.result(P.where(P.mask("gt", x, 0.0), x, P("mul", x, slope)), dtype))


@lowering(aten.threshold.default)
def threshold(L: Context, node: torch.fx.Node) -> None:
    # threshold(self, threshold, value): x <= threshold ? value : x (NaN is x)
    P, x, dtype = unary(L)
    t, v = float(L.arg(1, "threshold")), float(L.arg(2, "value"))
    L.bind(P.result(P.keep_nan(x, P.where(P.mask("gt", x, t), x, v)), dtype))


@lowering(aten.hardshrink.default)
def hardshrink(L: Context, node: torch.fx.Node) -> None:
    # -lambd <= x <= lambd ? 0 : x (NaN is x)
    P, x, dtype = unary(L)
    lambd = float(L.arg(1, "lambd", 0.5))
    L.bind(P.result(P.keep_nan(x, P.where(P.mask("gt", P("abs", x), lambd), x, 0.0)), dtype))


@lowering(aten.softshrink.default)
def softshrink(L: Context, node: torch.fx.Node) -> None:
    # x > lambd ? x - lambd : (x < -lambd ? x + lambd : 0) (NaN is x)
    P, x, dtype = unary(L)
    lambd = float(L.arg(1, "lambd", 0.5))
    below = P.where(P.mask("lt", x, -lambd), P("add", x, lambd), 0.0)
    r = P.where(P.mask("gt", x, lambd), P("sub", x, lambd), below)
    L.bind(P.result(P.keep_nan(x, r), dtype))


@lowering(aten.elu.default, aten.celu.default)
def elu(L: Context, node: torch.fx.Node) -> None:
    # elu(self, alpha=1, scale=1, input_scale=1):
    #   x > 0 ? x * scale : expm1(x * input_scale) * alpha * scale;
    # celu(self, alpha=1) is elu(self, alpha, 1, 1 / alpha)
    P, x, dtype = unary(L)
    alpha = float(L.arg(1, "alpha", 1.0))
    if node.target == aten.celu.default:
        if alpha == 0:
            raise L.unsupported("celu with alpha=0 (a division by zero)")
        scale, input_scale = 1.0, 1.0 / alpha
    else:
        scale, input_scale = float(L.arg(2, "scale", 1.0)), float(L.arg(3, "input_scale", 1.0))
    z = x if input_scale == 1 else P("mul", x, input_scale)
    negative = P("mul", P.expm1(z), alpha * scale)
    positive = x if scale == 1 else P("mul", x, scale)
    L.bind(P.result(P.where(P.mask("gt", x, 0.0), positive, negative), dtype))


def _softplus_of(P: Pointwise, z: Tensor) -> Tensor:
    # ln(1 + e^z), accurate where e^z is small
    return P.log1p(P("exp", z))


@lowering(aten.softplus.default)
def softplus(L: Context, node: torch.fx.Node) -> None:
    # softplus(self, beta=1, threshold=20):
    #   x * beta > threshold ? x : log1p(exp(x * beta)) / beta
    P, x, dtype = unary(L)
    beta, limit = float(L.arg(1, "beta", 1.0)), float(L.arg(2, "threshold", 20.0))
    if beta == 0:
        raise L.unsupported("softplus with beta=0 (a division by zero)")
    z = x if beta == 1 else P("mul", x, beta)
    r = _softplus_of(P, z)
    if beta != 1:
        r = P("div", r, beta)
    L.bind(P.result(P.where(P.mask("gt", z, limit), x, r), dtype))


@lowering(aten.mish.default)
def mish(L: Context, node: torch.fx.Node) -> None:
    # x * tanh(log1p(exp(x)))
    P, x, dtype = unary(L)
    L.bind(P.result(P("mul", x, P("tanh", _softplus_of(P, x))), dtype))


@lowering(aten.glu.default)
def glu(L: Context, node: torch.fx.Node) -> None:
    # glu(self, dim=-1): a * sigmoid(b), a and b the halves of the axis
    x = L.tensor(L.arg(0), "self")
    rank = len(x.shape)
    dim = L.arg(1, "dim", -1)
    dim = dim + rank if dim < 0 else dim
    half = x.shape[dim] // 2
    a, b = L.split(x, dim, [half, half])
    P = Pointwise(L)
    r = P("mul", P.input(a, "self"), P("sigmoid", P.input(b, "self")))
    L.bind(P.result(r, x.dtype))


# --- backward kernels (training) ---------------------------------------------------

def _gradient(L: Context) -> Tuple[Pointwise, Tensor, Tensor, torch.dtype]:
    """(grad_output, self, ...): the builder, both in float32, the dtype."""
    P = Pointwise(L)
    g = L.tensor(L.arg(0), "grad_output")
    return P, P.input(g, "grad_output"), P.input(L.arg(1), "self"), g.dtype


@lowering(aten.threshold_backward.default)
def threshold_backward(L: Context, node: torch.fx.Node) -> None:
    # (grad_output, self, threshold): x <= threshold ? 0 : grad (NaN: grad);
    # ReLU's backward
    P, g, x, dtype = _gradient(L)
    r = P.where(P.mask("gt", x, float(L.arg(2))), g, 0.0)
    L.bind(P.result(P.where(P.mask("eq", x, x), r, g), dtype))


@lowering(aten.hardtanh_backward.default)
def hardtanh_backward(L: Context, node: torch.fx.Node) -> None:
    # (grad_output, self, min_val, max_val): min < x < max ? grad : 0 (NaN:
    # 0, as torch's vectorized CPU kernel)
    P, g, x, dtype = _gradient(L)
    lo, hi = float(L.arg(2)), float(L.arg(3))
    L.bind(P.result(P.where(P.mask("gt", x, lo), P.where(P.mask("lt", x, hi), g, 0.0), 0.0),
                    dtype))


@lowering(aten.hardsigmoid_backward.default)
def hardsigmoid_backward(L: Context, node: torch.fx.Node) -> None:
    # -3 < x < 3 ? grad / 6 : 0 (NaN: 0)
    P, g, x, dtype = _gradient(L)
    inside = P.where(P.mask("lt", x, 3.0), P("mul", g, 1.0 / 6.0), 0.0)
    L.bind(P.result(P.where(P.mask("gt", x, -3.0), inside, 0.0), dtype))


@lowering(aten.hardswish_backward.default)
def hardswish_backward(L: Context, node: torch.fx.Node) -> None:
    # x <= -3 ? 0 : (x < 3 ? grad (x / 3 + 1/2) : grad) (NaN: NaN, as
    # torch's vectorized CPU kernel)
    P, g, x, dtype = _gradient(L)
    r = P.where(P.mask("ge", x, 3.0), g, P("mul", g, P("add", P("div", x, 3.0), 0.5)))
    L.bind(P.result(P.keep_nan(x, P.where(P.mask("gt", x, -3.0), r, 0.0)), dtype))


@lowering(aten.native_dropout_backward.default)
def native_dropout_backward(L: Context, node: torch.fx.Node) -> None:
    # (grad_output, mask, scale): grad * mask * scale, the bool mask as 0
    # and 1 (a NaN gradient stays NaN where the mask is 0, as torch)
    P = Pointwise(L)
    g = L.tensor(L.arg(0), "grad_output")
    m = P.as_float(L.tensor(L.arg(1), "mask"))
    r = P("mul", P("mul", P.input(g, "grad_output"), m), float(L.arg(2)))
    L.bind(P.result(r, g.dtype))
