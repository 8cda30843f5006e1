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
