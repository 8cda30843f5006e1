# SPDX-License-Identifier: MIT
"""The device's error bounds of hw/isa.md section 6, propagated through the
layers the tests use, against the same model run by torch on the CPU in
double precision. Each function returns (reference, bound) per element."""

from typing import Tuple

import torch

MATMUL_REL = 1e-5  # |err| <= 1e-5 * sum_k |a*b| + 1e-6
MATMUL_ABS = 1e-6
ACTIVATE_REL = 1e-5  # |err| <= 1e-5 * |ref| + 1e-6
ACTIVATE_ABS = 1e-6
FP32_ROUNDING = 2.0 ** -24  # an exact fp32 operation: correctly rounded
# The largest slope of GELU (1.1289) and SiLU (1.0998): how far an input
# error moves the activation's result.
ACTIVATION_SLOPE = {"relu": 1.0, "gelu": 1.13, "silu": 1.13}

Bounded = Tuple[torch.Tensor, torch.Tensor]


def exact(x: torch.Tensor) -> Bounded:
    return x.double(), torch.zeros_like(x, dtype=torch.float64)


def linear(x: Bounded, layer: torch.nn.Linear) -> Bounded:
    """x W^T + b with the bias added in PSUM as one more product."""
    v, e = x
    w = layer.weight.detach().double()
    b = layer.bias.detach().double() if layer.bias is not None else None
    ref = v @ w.T + (b if b is not None else 0)
    magnitude = v.abs() @ w.abs().T + (b.abs() if b is not None else 0)
    # The device computes from its (inexact) inputs: their error, through
    # |W|, plus the matmul's own.
    return ref, e @ w.abs().T + MATMUL_REL * (magnitude + e @ w.abs().T) + MATMUL_ABS


def activation(x: Bounded, name: str) -> Bounded:
    v, e = x
    ref = {"relu": torch.relu, "gelu": torch.nn.functional.gelu,
           "silu": torch.nn.functional.silu}[name](v)
    return ref, ACTIVATION_SLOPE[name] * e + ACTIVATE_REL * ref.abs() + ACTIVATE_ABS


def add(a: Bounded, b: Bounded) -> Bounded:
    ref = a[0] + b[0]
    return ref, a[1] + b[1] + FP32_ROUNDING * (ref.abs() + a[1] + b[1])


def check(out: torch.Tensor, expected: Bounded) -> None:
    ref, bound = expected
    assert out.shape == ref.shape, f"shape {tuple(out.shape)}, expected {tuple(ref.shape)}"
    err = (out.double() - ref).abs()
    worst = int(torch.argmax(err - bound))
    assert bool((err <= bound).all()), (
        f"{int((err > bound).sum())} of {err.numel()} elements beyond hw/isa.md's bound; "
        f"worst: error {err.flatten()[worst].item():.3g}, bound {bound.flatten()[worst].item():.3g}")


def cumsum(x: Bounded, dim: int) -> Bounded:
    """torch.cumsum on the CPU in fp32 of inexact inputs. With the running
    sum rounded at each of the n steps (u = 2^-24), the error B_j of the
    j-th sum S_j obeys B_j <= sum_{k<=j} (e_k + u (|S_k| + B_k)); as B_k <=
    B_j, B_j <= (sum_{k<=j} e_k + u sum_{k<=j} |S_k|) / (1 - j u). (torch
    accumulates in double on the CPU, which this bound covers.)"""
    v, e = x
    ref = torch.cumsum(v, dim)
    steps = torch.arange(1, v.shape[dim] + 1, dtype=torch.float64)
    shape = [1] * v.dim()
    shape[dim] = v.shape[dim]
    steps = steps.reshape(shape)
    bound = (torch.cumsum(e, dim) + FP32_ROUNDING * torch.cumsum(ref.abs(), dim)) / (
        1 - steps * FP32_ROUNDING)
    return ref, bound


# --- the operators of attention and normalisation, as the compiler lowers
# them (docs/compiler.md): each step is one instruction of hw/isa.md
# section 6 whose inputs are within a bound of the reference; the bound
# of its result is the worst case over those inputs plus the
# instruction's own error.

REDUCE_REL = 1e-5  # REDUCE sum: |err| <= 1e-5 * sum |x|
RSQRT_ULP = 2.0 ** -23  # ACTIVATE rsqrt: 1 ulp, at most 2^-23 * |result|


def _f32(v: float) -> float:
    """@p v as the fp32 number an instruction's scalar operand holds."""
    return float(torch.tensor(v, dtype=torch.float32))


def rounded(ref: torch.Tensor, err: torch.Tensor) -> Bounded:
    """A value within @p err of @p ref before its exact fp32 operation
    rounds it (hw/isa.md: correctly rounded)."""
    return ref, err + FP32_ROUNDING * (ref.abs() + err)


def scale(x: Bounded, factor: float) -> Bounded:
    """x * factor (or x / divisor, factor = 1 / divisor) by TENSOR_SCALAR."""
    v, e = x
    return rounded(v * factor, abs(factor) * e)


def mul(a: Bounded, b: Bounded) -> Bounded:
    (va, ea), (vb, eb) = a, b
    return rounded(va * vb, va.abs() * eb + vb.abs() * ea + ea * eb)


def sub(a: Bounded, b: Bounded) -> Bounded:
    return rounded(a[0] - b[0], a[1] + b[1])


def matmul(a: Bounded, b: Bounded) -> Bounded:
    """a @ b of two inexact operands (fp32, batched like torch.matmul): the
    inputs' errors through the other operand's magnitude, plus MATMUL's
    own error on the operands it is given."""
    (va, ea), (vb, eb) = a, b
    ref = va @ vb
    propagated = va.abs() @ eb + ea @ vb.abs() + ea @ eb
    magnitude = (va.abs() + ea) @ (vb.abs() + eb)
    return ref, propagated + MATMUL_REL * magnitude + MATMUL_ABS


def linear_of(x: Bounded, weight: torch.Tensor, bias: torch.Tensor) -> Bounded:
    """x W^T + b, the bias one more product of the MATMUL (as linear())."""
    v, e = x
    w, b = weight.detach().double(), bias.detach().double()
    ref = v @ w.T + b
    through = e @ w.abs().T
    return ref, through + MATMUL_REL * (v.abs() @ w.abs().T + b.abs() + through) + MATMUL_ABS


def reduce_sum(x: Bounded) -> Bounded:
    """REDUCE sum over the last axis (kept as a column of one)."""
    v, e = x
    ref = v.sum(-1, keepdim=True)
    return ref, e.sum(-1, keepdim=True) + REDUCE_REL * (v.abs() + e).sum(-1, keepdim=True)


def softmax(x: Bounded, causal: bool = False) -> Bounded:
    """softmax over the last axis as the compiler emits it: REDUCE max m
    (exact), ACTIVATE exp(x - m) (the subtraction is ACTIVATE's bias, so
    inside its reference), REDUCE sum s, TENSOR_SCALAR divide by s. With
    @p causal the scores where key k > query q are -inf (SELECT, exact),
    whose exp the ISA bounds by its absolute 1e-6 like any other."""
    v, e = x
    keep = torch.ones(v.shape[-2:], dtype=torch.bool).tril() if causal else \
        torch.ones(v.shape[-1:], dtype=torch.bool)
    keep = keep.expand(v.shape)
    masked_v = v.masked_fill(~keep, float("-inf"))
    e = e.masked_fill(~keep, 0.0)
    m = masked_v.max(-1, keepdim=True).values
    em = e.max(-1, keepdim=True).values
    z = masked_v - m
    ez = e + em
    t = torch.exp(z)
    # exp over [z - ez, z + ez], then ACTIVATE's own error there
    et = (t * torch.expm1(ez) + ACTIVATE_REL * torch.exp(z + ez)).masked_fill(~keep, 0.0) \
        + ACTIVATE_ABS
    s, es = reduce_sum((t, et))
    assert bool((es < s).all()), "the sum's bound exceeds the sum"
    ref = t / s
    return rounded(ref, (et * s + t * es) / (s * (s - es)))


def layer_norm(x: Bounded, weight: torch.Tensor, bias: torch.Tensor, eps: float) -> Bounded:
    """layer_norm over the last axis as the compiler emits it: REDUCE sum,
    times fp32(1/C) (the mean), subtract it, square, REDUCE sum, one
    ACTIVATE rsqrt(sum * fp32(1/C) + fp32(eps)) within 1 ulp, multiply the
    centred values by it, by the weight, add the bias."""
    v, e = x
    C = v.shape[-1]
    inv_c = _f32(1.0 / C)
    s = reduce_sum(x)
    mean = mul(s, (torch.full_like(s[0], 1.0 / C), torch.full_like(s[0], abs(inv_c - 1.0 / C))))
    centred = sub(x, mean)
    var_sum = reduce_sum(mul(centred, centred))
    # ACTIVATE's input, inside its reference: sum * inv_c + eps in double
    z = var_sum[0] / C + eps
    ez = var_sum[1] * inv_c + var_sum[0] * abs(inv_c - 1.0 / C) + abs(_f32(eps) - eps)
    assert bool((ez < z).all()), "the variance's bound reaches 0"
    r = z.rsqrt()
    low = (z - ez).rsqrt()
    er = (low - r) + RSQRT_ULP * low
    y = mul(centred, (r, er))
    y = mul(y, exact(weight.detach().float()))
    return rounded(y[0] + bias.detach().double(), y[1])
