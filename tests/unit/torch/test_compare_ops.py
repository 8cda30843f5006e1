# SPDX-License-Identifier: MIT
"""Comparisons with bool results (the device's u8 masks), where with a
condition computed on the device, and casts (_to_copy) through
torch_neuronx.trace on the simulator, against torch on the CPU: all exact."""

from typing import Callable

import pytest
import torch

import torch_neuronx

COMPARISONS = {"eq": torch.eq, "ne": torch.ne, "lt": torch.lt, "le": torch.le,
               "gt": torch.gt, "ge": torch.ge}


class Two(torch.nn.Module):
    def __init__(self, f: Callable[[torch.Tensor, torch.Tensor], torch.Tensor]) -> None:
        super().__init__()
        self.f = f
        self.eval()  # as torch_neuronx.trace wants it

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return self.f(x, y)


class Cast(torch.nn.Module):
    def __init__(self, to: torch.dtype) -> None:
        super().__init__()
        self.to_dtype = to
        self.eval()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x.to(self.to_dtype)


def operands(dtype: torch.dtype):  # type: ignore[no-untyped-def]
    g = torch.Generator().manual_seed(11)
    x = torch.randn(129, 77, generator=g).to(dtype)
    y = torch.randn(129, 77, generator=g).to(dtype)
    y[::3] = x[::3]  # equal elements for eq and ne
    return x, y


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.int32])
@pytest.mark.parametrize("name", sorted(COMPARISONS))
def test_comparison(name: str, dtype: torch.dtype) -> None:
    f = COMPARISONS[name]
    x, y = operands(torch.float32)
    if dtype == torch.int32:
        x, y = (x * 1000).to(dtype), (y * 1000).to(dtype)
    else:
        x, y = x.to(dtype), y.to(dtype)
    got = torch_neuronx.trace(Two(f), (x, y))(x, y)
    assert got.dtype == torch.bool
    assert torch.equal(got, f(x, y))
    # with a number, on either side
    got = torch_neuronx.trace(Two(lambda a, b: f(a, 0.25)), (x, y))(x, y)
    assert torch.equal(got, f(x, 0.25))


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_where(dtype: torch.dtype) -> None:
    x, y = operands(dtype)
    got = torch_neuronx.trace(Two(lambda a, b: torch.where(a < b, a, b * 2)), (x, y))(x, y)
    assert torch.equal(got, torch.where(x < y, x, y * 2))
    got = torch_neuronx.trace(Two(lambda a, b: torch.where(a > 0.5, a, -1e4)), (x, y))(x, y)
    assert torch.equal(got, torch.where(x > 0.5, x, torch.tensor(-1e4, dtype=dtype)))


@pytest.mark.parametrize("to", [torch.int32, torch.bfloat16, torch.float32, torch.float16,
                                torch.bool])
def test_cast(to: torch.dtype) -> None:
    g = torch.Generator().manual_seed(13)
    x = torch.randn(300, 65, generator=g) * 100
    x[0, :4] = torch.tensor([2.5, -2.5, 0.0, -0.7])
    for src in (torch.float32, torch.bfloat16):
        v = x.to(src)
        if v.dtype == to:
            continue
        got = torch_neuronx.trace(Cast(to), v)(v)
        assert got.dtype == to
        assert torch.equal(got, v.to(to)), (got, v.to(to))


def test_mask_to_float() -> None:
    x, y = operands(torch.float32)
    got = torch_neuronx.trace(Two(lambda a, b: (a < b).to(torch.float32) * a), (x, y))(x, y)
    assert torch.equal(got, (x < y).to(torch.float32) * x)
