# SPDX-License-Identifier: MIT
"""The C++ half of the device's fallback kernel (csrc/runtime/fast_path.cpp):
a call whose signature already ran as a device kernel runs it again from
C++; a call of another signature (shape, dtype, another argument's value,
a strided input) gets its own kernel, never another's."""

from typing import Dict

import pytest
import torch

import torch_neuronx

pytestmark = pytest.mark.skipif(not torch.neuron.is_available(), reason="no neuron device")


def kept_runs() -> Dict[str, int]:
    names, runs = torch.ops.neuron.kept_kernel_runs()
    return dict(zip(names, runs))


def test_a_repeated_call_runs_its_kept_kernel() -> None:
    a, b = torch.randn(7, 33), torch.randn(7, 33)
    na, nb = a.to("neuron"), b.to("neuron")
    torch.add(na, nb)  # compiles, or finds, the kernel: Python's half
    before = kept_runs().get("aten::add.Tensor", 0)
    device_ops = torch_neuronx.get_device_ops().get("aten::add.Tensor", 0)
    for _ in range(3):
        torch.testing.assert_close(torch.add(na, nb).cpu(), a + b, rtol=0, atol=0)
    assert kept_runs().get("aten::add.Tensor", 0) == before + 3
    assert torch_neuronx.get_device_ops()["aten::add.Tensor"] == device_ops + 3


def test_signatures_that_differ_get_their_own_kernels() -> None:
    x = torch.randn(5, 17)
    nx = x.to("neuron")
    for _ in range(2):  # the second round runs kept kernels
        for alpha in (1, 2, 0.5, 1.5):
            torch.testing.assert_close(torch.add(nx, nx, alpha=alpha).cpu(), x + alpha * x)
        for scalar in (2.0, 3.0, -1.5):
            torch.testing.assert_close((nx * scalar).cpu(), x * scalar)
        for slope in (0.1, 0.3):
            torch.testing.assert_close(torch.nn.functional.leaky_relu(nx, slope).cpu(),
                                       torch.nn.functional.leaky_relu(x, slope))
        torch.testing.assert_close(F_gelu(nx, "none").cpu(), F_gelu(x, "none"))
        torch.testing.assert_close(F_gelu(nx, "tanh").cpu(), F_gelu(x, "tanh"))
        y = torch.randn(5, 18)
        torch.testing.assert_close((y.to("neuron") * 2.0).cpu(), y * 2.0)
        h = x.to(torch.bfloat16)
        torch.testing.assert_close((h.to("neuron") * 2.0).cpu(), h * 2.0)


def F_gelu(t: torch.Tensor, approximate: str) -> torch.Tensor:
    return torch.nn.functional.gelu(t, approximate=approximate)


def test_strided_and_zero_dimensional_inputs_take_the_python_half() -> None:
    a, b = torch.randn(9, 4), torch.randn(4, 9)
    na, nb = a.to("neuron"), b.to("neuron")
    for _ in range(2):
        torch.testing.assert_close((na + nb.t()).cpu(), a + b.t())
        torch.testing.assert_close((na * torch.tensor(3.0, device="neuron")).cpu(), a * 3.0)
        torch.testing.assert_close(na.sum().cpu(), a.sum(), rtol=1e-5, atol=1e-5)


def test_in_place_calls_write_their_input_each_time() -> None:
    a, b = torch.randn(6, 10), torch.randn(6, 10)
    na, nb = a.to("neuron"), b.to("neuron")
    for _ in range(4):
        na.add_(nb, alpha=0.5)
        a.add_(b, alpha=0.5)
        na.mul_(1.5)
        a.mul_(1.5)
    torch.testing.assert_close(na.cpu(), a)
    assert kept_runs().get("aten::add.Tensor", 0) > 0  # counted as the kernel it runs


def test_in_place_into_bfloat16_converts_as_the_python_half_does() -> None:
    a = torch.randn(8, 8).to(torch.bfloat16)
    b = torch.randn(8, 8)
    na, nb = a.to("neuron"), b.to("neuron")
    for _ in range(3):
        na.add_(nb)
        a.add_(b)
    torch.testing.assert_close(na.cpu(), a)


def test_errors_of_a_kept_signature_stay_errors() -> None:
    na = torch.randn(4, 4, device="neuron")
    torch.add(na, na)
    with pytest.raises(RuntimeError, match="same device"):
        torch.add(na, torch.randn(4, 4))
