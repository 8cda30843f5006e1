# SPDX-License-Identifier: MIT
"""The unary functions of ISA 1.2's and 1.1's ACTIVATE through
torch_neuronx.trace on the simulator: aten.log, erf, sqrt, rsqrt,
reciprocal and abs against torch on the CPU in double, within hw/isa.md's
bounds (1 ulp for ln, erf, rsqrt; sqrt, reciprocal and abs correctly
rounded; a bf16 result within 1e-2 |ref| + 1e-3), fp32 and bf16, on odd
shapes."""

from typing import Callable, Tuple

import pytest
import torch

import torch_neuronx

FUNCTIONS = {
    "log": torch.log,
    "erf": torch.erf,
    "sqrt": torch.sqrt,
    "rsqrt": torch.rsqrt,
    "reciprocal": torch.reciprocal,
    "abs": torch.abs,
}
# Functions of a positive operand: their inputs are magnitudes in [0.25, 4).
POSITIVE = {"log", "sqrt", "rsqrt", "reciprocal"}


class Unary(torch.nn.Module):
    def __init__(self, f: Callable[[torch.Tensor], torch.Tensor]) -> None:
        super().__init__()
        self.f = f
        self.eval()  # as torch_neuronx.trace wants it

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.f(x)


def inputs(name: str, shape: Tuple[int, ...], dtype: torch.dtype) -> torch.Tensor:
    g = torch.Generator().manual_seed(len(name) * 1000 + sum(shape))
    if name in POSITIVE:
        x = torch.exp2(torch.rand(shape, generator=g) * 4 - 2)
    else:
        x = torch.randn(shape, generator=g) * 2
    return x.to(dtype)


def bound(ref: torch.Tensor, name: str, dtype: torch.dtype) -> torch.Tensor:
    if dtype == torch.bfloat16:
        return 1e-2 * ref.abs() + 1e-3
    if name in ("sqrt", "reciprocal", "abs"):  # correctly rounded: half an ulp
        return 2.0 ** -24 * ref.abs()
    return 2.0 ** -23 * ref.abs() + 2.0 ** -149  # 1 ulp of the binade


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("shape", [(1,), (77, 129), (2, 129, 200)])
@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_unary(name: str, shape: Tuple[int, ...], dtype: torch.dtype) -> None:
    f = FUNCTIONS[name]
    x = inputs(name, shape, dtype)
    y = torch_neuronx.trace(Unary(f), x)(x)
    assert y.dtype == dtype and y.shape == x.shape
    ref = f(x.double())
    err = (y.double() - ref).abs()
    b = bound(ref, name, dtype)
    worst = int(torch.argmax(err - b))
    assert bool((err <= b).all()), \
        f"{name}({float(x.flatten()[worst])}) = {float(y.flatten()[worst])}, " \
        f"want {float(ref.flatten()[worst])} (bound {float(b.flatten()[worst])})"


def test_chain() -> None:
    """log(|x| * 0.5 + 1) then erf: steps of one elementwise chain."""
    x = torch.randn(300, 65)
    y = torch_neuronx.trace(Unary(lambda t: torch.erf(torch.log(t.abs() * 0.5 + 1))), x)(x)
    ref = torch.erf(torch.log(x.double().abs() * 0.5 + 1))
    assert torch.allclose(y.double(), ref, rtol=1e-5, atol=1e-6)


class Binary(torch.nn.Module):
    def __init__(self, f: Callable[[torch.Tensor, torch.Tensor], torch.Tensor]) -> None:
        super().__init__()
        self.f = f
        self.eval()  # as torch_neuronx.trace wants it

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return self.f(x, y)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_maximum_minimum_clamp(dtype: torch.dtype) -> None:
    """Exact: one of the operands (a row [C] broadcast against [R, C])."""
    g = torch.Generator().manual_seed(3)
    x = torch.randn(129, 77, generator=g).to(dtype)
    for y in (torch.randn(129, 77, generator=g).to(dtype), torch.randn(77, generator=g).to(dtype)):
        for f in (torch.maximum, torch.minimum):
            assert torch.equal(torch_neuronx.trace(Binary(f), (x, y))(x, y), f(x, y))
    for lo, hi in ((-0.5, 0.5), (None, 0.25), (-1.0, None)):
        m = Unary(lambda t, lo=lo, hi=hi: torch.clamp(t, lo, hi))
        assert torch.equal(torch_neuronx.trace(m, x)(x), torch.clamp(x, lo, hi))


@pytest.mark.parametrize("n", [2, 3, -1, -2, 0.5, -0.5, 1.5, -2.25])
def test_pow_scalar(n: float) -> None:
    g = torch.Generator().manual_seed(5)
    x = torch.exp2(torch.rand(200, 65, generator=g) * 4 - 2)  # [0.25, 4)
    if n == int(n):
        x = x * torch.where(torch.rand(200, 65, generator=g) < 0.5, -1.0, 1.0)
    y = torch_neuronx.trace(Unary(lambda t: torch.pow(t, n)), x)(x)
    ref = torch.pow(x.double(), n)
    # products and a reciprocal, each rounded; e^(n ln x): ln's 1 ulp
    # times |n| and exp's 1e-5 relative
    rtol = 4 * 2.0 ** -24 if n == int(n) or abs(n) == 0.5 else 1e-5 + abs(n) * 2.0 ** -23 * 3.0
    assert torch.allclose(y.double(), ref, rtol=rtol, atol=1e-6), (y - ref).abs().max()


def test_pow_tensor() -> None:
    g = torch.Generator().manual_seed(7)
    x = torch.exp2(torch.rand(77, 129, generator=g) * 4 - 2)
    e = torch.randn(77, 129, generator=g)
    y = torch_neuronx.trace(Binary(torch.pow), (x, e))(x, e)
    ref = torch.pow(x.double(), e.double())
    assert torch.allclose(y.double(), ref, rtol=2e-5, atol=1e-6), (y - ref).abs().max()
