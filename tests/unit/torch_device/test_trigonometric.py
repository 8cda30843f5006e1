# SPDX-License-Identifier: MIT
"""sin and cos on the device (lowering/ops/functions.py: Cody and Waite's
reduction by pi/2 and Cephes' polynomials), against the CPU: Llama's
rotary positions take them of positions times frequencies."""

import math

import pytest
import torch

import torch_neuronx

# Within 2 float32 ulps of 1 of the CPU's (both are within about an ulp
# of the exact value) up to |x| = 12868, where the reduction is exact.
ATOL = 1.2e-7


@pytest.mark.parametrize("fn", [torch.sin, torch.cos], ids=lambda f: f.__name__)
def test_sin_and_cos_match_the_cpu(fn) -> None:  # type: ignore[no-untyped-def]
    torch.manual_seed(0)
    before = torch_neuronx.get_fallback_ops()
    for limit in (1.0, 64.0, 12868.0):
        x = (torch.rand(2048) * 2 - 1) * limit
        torch.testing.assert_close(fn(x.to("neuron")).cpu(), fn(x), rtol=0, atol=ATOL)
    # multiples of pi/2 and the special values (sin -0 is -0, NaN at infinities)
    special = torch.tensor([0.0, -0.0, math.pi, -math.pi / 2, 3 * math.pi / 2, 1e-30,
                            float("inf"), float("-inf"), float("nan")])
    got, want = fn(special.to("neuron")).cpu(), fn(special)
    torch.testing.assert_close(got, want, rtol=0, atol=ATOL, equal_nan=True)
    assert torch.equal(got.signbit(), want.signbit()) or fn is torch.cos
    # bfloat16: computed in float32 and rounded once, as the CPU does
    xb = ((torch.rand(2048) * 2 - 1) * 64).bfloat16()
    torch.testing.assert_close(fn(xb.to("neuron")).cpu(), fn(xb), rtol=0, atol=0)
    assert torch_neuronx.get_fallback_ops() == before
