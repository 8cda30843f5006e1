# SPDX-License-Identifier: MIT
"""Copies between `neuron` tensors of one shape: of one dtype and alike in
memory, a DMA copy; a transposed or permuted view of dense memory into a
contiguous tensor (`.contiguous()`, a linear layer's transposed weight as
a kernel's input), a device permute kernel; between float32 and bfloat16,
a device cast kernel; others through the host."""

import pytest
import torch

import torch_neuronx

pytestmark = pytest.mark.skipif(not torch.neuron.is_available(), reason="no neuron device")


def permute_copies() -> int:
    return torch_neuronx.get_device_ops().get("aten::permute_copy", 0)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("shape,view", [
    ((13, 7), lambda t: t.t()),
    ((2, 5, 3, 4), lambda t: t.transpose(1, 2)),
    ((3, 4, 5), lambda t: t.permute(2, 0, 1)),
    ((1, 6, 1, 5), lambda t: t.transpose(0, 3)),
])
def test_a_permuted_view_is_made_contiguous_on_the_device(shape, view, dtype) -> None:
    x = torch.randn(shape).to(dtype)
    before = permute_copies()
    got = view(x.to("neuron")).contiguous()
    assert got.is_contiguous()
    assert torch.equal(got.cpu(), view(x).contiguous())
    assert permute_copies() == before + 1


def test_a_linear_layer_takes_its_transposed_weight_without_the_host() -> None:
    lin = torch.nn.Linear(24, 10)
    x = torch.randn(5, 24)
    nlin, nx = torch.nn.Linear(24, 10).to("neuron"), x.to("neuron")
    nlin.load_state_dict(lin.state_dict())
    before = permute_copies()
    torch.testing.assert_close(nlin(nx).cpu(), lin(x), rtol=1e-5, atol=1e-5)
    assert permute_copies() > before


def test_a_clone_keeps_a_permuted_layout() -> None:
    x = torch.randn(6, 9)
    y = torch.clone(x.to("neuron").t())  # preserve_format: the same strides
    assert y.stride() == x.t().stride()
    assert torch.equal(y.cpu(), x.t())


@pytest.mark.parametrize("make", [
    lambda x: x.t(),                       # int64: the device does not compute in it
    lambda x: x[:, ::2],                   # strided with gaps: not dense
    lambda x: x[:1].expand(4, x.shape[1]),  # broadcast
])
def test_other_views_are_copied_through_the_host(make) -> None:
    x = torch.arange(40).reshape(4, 10)
    for src in (x, x.float()):
        got = make(src.to("neuron")).contiguous()
        assert torch.equal(got.cpu(), make(src).contiguous())


def casts() -> int:
    return torch_neuronx.get_device_ops().get("neuron::cast", 0)


@pytest.mark.parametrize("src,dst", [(torch.float32, torch.bfloat16),
                                     (torch.bfloat16, torch.float32)])
@pytest.mark.parametrize("view", [lambda t: t, lambda t: t.t()])
def test_a_conversion_between_float32_and_bfloat16_is_a_device_kernel(src, dst, view) -> None:
    # Values that round differently to bf16 (ties to even, beyond its range).
    x = (torch.randn(37, 129) * 1e3).to(src)
    x[0, :4] = torch.tensor([1.00390625, 1.01171875, 3.4e38, -0.0]).to(src)
    fallbacks = torch_neuronx.get_fallback_ops()
    before = casts()
    got = view(x.to("neuron")).to(dst)
    want = view(x).to(dst)
    assert got.dtype == dst and got.stride() == want.stride()  # .to() keeps the layout
    assert torch.equal(got.cpu(), want)
    # copy_ into an existing tensor takes the same kernel.
    out = torch.empty(view(x).shape, dtype=dst, device="neuron")
    out.copy_(view(x.to("neuron")))
    assert torch.equal(out.cpu(), want)
    assert casts() == before + 2
    assert torch_neuronx.get_fallback_ops() == fallbacks


def test_autocast_casts_its_operands_on_the_device() -> None:
    lin = torch.nn.Linear(64, 32).to("neuron")
    x = torch.randn(8, 64, device="neuron")
    before = casts()
    with torch.autocast("neuron", dtype=torch.bfloat16):
        y = lin(x)
    assert y.dtype == torch.bfloat16
    assert casts() >= before + 2  # the input and the weight at least
    with torch.autocast("cpu", dtype=torch.bfloat16):
        want = torch.nn.functional.linear(x.cpu(), lin.weight.cpu(), lin.bias.cpu())
    torch.testing.assert_close(y.cpu().float(), want.float(), rtol=1e-2, atol=1e-2)


def test_a_float16_conversion_still_goes_through_the_host() -> None:
    # The device does not compute in float16: the copy converts on the host.
    x = torch.randn(9, 10)
    fallbacks = torch_neuronx.get_fallback_ops()
    before = casts()
    assert torch.equal(x.to("neuron").to(torch.float16).cpu(), x.to(torch.float16))
    assert casts() == before
    assert torch_neuronx.get_fallback_ops() == fallbacks
