# SPDX-License-Identifier: MIT
"""Copies between `neuron` tensors of one dtype and shape: alike in memory,
a DMA copy; a transposed or permuted view of dense memory into a
contiguous tensor (`.contiguous()`, a linear layer's transposed weight as
a kernel's input), a device permute kernel; others through the host."""

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
