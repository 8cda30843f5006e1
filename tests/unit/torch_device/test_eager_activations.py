# SPDX-License-Identifier: MIT
"""The backward kernels of the piecewise activations (ReLU's
threshold_backward, hardtanh, hardsigmoid, hardswish), which have no
OpInfo of their own: on the device (not the CPU fallback), equal to the
CPU's gradients, at the pieces' boundaries and for NaN inputs too (as
torch's vectorized CPU kernels give them). They are selections and one
multiplication, so the gradients are exact in float32 and rounded once in
bfloat16."""

from typing import Any

import pytest
import torch

import torch_neuronx

ACTIVATIONS = [torch.nn.ReLU(), torch.nn.Threshold(0.5, 2.0), torch.nn.Hardtanh(),
               torch.nn.ReLU6(), torch.nn.Hardsigmoid(), torch.nn.Hardswish()]
BACKWARD = {"ReLU": "threshold_backward", "Threshold": "threshold_backward",
            "Hardtanh": "hardtanh_backward", "ReLU6": "hardtanh_backward",
            "Hardsigmoid": "hardsigmoid_backward", "Hardswish": "hardswish_backward"}


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=str)
@pytest.mark.parametrize("activation", ACTIVATIONS, ids=lambda a: type(a).__name__)
def test_activation_backward_matches_the_cpu(activation: Any, dtype: torch.dtype) -> None:
    g = torch.Generator().manual_seed(3)
    x = (torch.randn(64, 16, generator=g) * 4).to(dtype)
    # the boundaries of every piece, and NaN
    x[0, :9] = torch.tensor([float("nan"), 3.0, -3.0, 1.0, -1.0, 0.0, 0.5, 6.0, -0.0])
    x.requires_grad_()
    on_device = x.detach().to("neuron").requires_grad_()
    weights = torch.randn(64, 16, generator=g).to(dtype)
    (activation(x) * weights).sum().backward()
    fallbacks = dict(torch_neuronx.get_fallback_ops())
    before = torch_neuronx.get_device_ops()
    (activation.to("neuron")(on_device) * weights.to("neuron")).sum().backward()
    name = f"aten::{BACKWARD[type(activation).__name__]}"
    assert torch_neuronx.get_device_ops().get(name, 0) > before.get(name, 0)
    assert torch_neuronx.get_fallback_ops() == fallbacks
    assert on_device.grad is not None and x.grad is not None
    torch.testing.assert_close(on_device.grad.cpu(), x.grad, equal_nan=True, atol=0,
                               rtol=0 if dtype == torch.float32 else 2.0 ** -8)
