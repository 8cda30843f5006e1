# SPDX-License-Identifier: MIT
"""Copies between `neuron` tensors: of one dtype, shape and layout, a DMA
copy; a view made contiguous (a slice, a step, a transpose or permutation,
a broadcast) or written into, device kernels (torch_neuronx/strided.py)
moving the elements' bits; between float32 and bfloat16, a device cast
kernel; other conversions and one-byte dtypes through the host."""

import itertools
import random

import pytest
import torch

import torch_neuronx

pytestmark = pytest.mark.skipif(not torch.neuron.is_available(), reason="no neuron device")


def device_ops(name: str) -> int:
    return torch_neuronx.get_device_ops().get(name, 0)


def gathers() -> int:
    return device_ops("neuron::gather_strided")


def scatters() -> int:
    return device_ops("neuron::scatter_strided")


def same_bits(got: torch.Tensor, want: torch.Tensor) -> bool:
    return got.dtype == want.dtype and got.shape == want.shape and torch.equal(
        got.contiguous().view(torch.uint8), want.contiguous().view(torch.uint8))


def random_bits(shape, dtype: torch.dtype, seed: int) -> torch.Tensor:
    """Any bit pattern of @p dtype: NaNs with payloads, infinities, -0.0,
    subnormals (moved, never computed on)."""
    g = torch.Generator().manual_seed(seed)
    n = torch.Size(shape).numel() * dtype.itemsize
    return torch.randint(0, 256, (n,), dtype=torch.uint8, generator=g).view(dtype).view(shape)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("shape,view", [
    ((13, 7), lambda t: t.t()),
    ((2, 5, 3, 4), lambda t: t.transpose(1, 2)),
    ((3, 4, 5), lambda t: t.permute(2, 0, 1)),
    ((1, 6, 1, 5), lambda t: t.transpose(0, 3)),
])
def test_a_permuted_view_is_made_contiguous_on_the_device(shape, view, dtype) -> None:
    x = torch.randn(shape).to(dtype)
    before = gathers()
    got = view(x.to("neuron")).contiguous()
    assert got.is_contiguous()
    assert torch.equal(got.cpu(), view(x).contiguous())
    assert gathers() == before + 1


def test_a_linear_layer_takes_its_transposed_weight_without_the_host() -> None:
    lin = torch.nn.Linear(24, 10)
    x = torch.randn(5, 24)
    nlin, nx = torch.nn.Linear(24, 10).to("neuron"), x.to("neuron")
    nlin.load_state_dict(lin.state_dict())
    before = gathers()
    torch.testing.assert_close(nlin(nx).cpu(), lin(x), rtol=1e-5, atol=1e-5)
    assert gathers() > before


def test_a_clone_keeps_a_permuted_layout() -> None:
    x = torch.randn(6, 9)
    y = torch.clone(x.to("neuron").t())  # preserve_format: the same strides
    assert y.stride() == x.t().stride()
    assert torch.equal(y.cpu(), x.t())


# Views of a [6, 10, 12] tensor as users make them.
VIEWS = {
    "slice": lambda t: t[:, 2:7],
    "last axis slice": lambda t: t[..., 3:9],
    "steps": lambda t: t[::2, 1::3, ::5],
    "select": lambda t: t[:, 4],
    "select last": lambda t: t[..., 11],
    "transpose of a slice": lambda t: t[1:5, :, 2:10].transpose(0, 2),
    "permute with steps": lambda t: t[:, ::3].permute(2, 0, 1),
    "heads": lambda t: t.reshape(6, 10, 3, 4)[:, :, 1:].transpose(1, 2),
    "broadcast": lambda t: t[:, :1].expand(6, 5, 12),
    "broadcast of an element": lambda t: t[2, 3, 4].expand(3, 7),
    "new broadcast axis": lambda t: t[0].unsqueeze(1).expand(10, 300, 12),
}
DTYPES = [torch.float32, torch.bfloat16, torch.float16, torch.int32, torch.int64,
          torch.int16, torch.float64]


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("name", VIEWS)
def test_a_view_is_made_contiguous_on_the_device_bit_for_bit(name, dtype) -> None:
    x = random_bits((6, 10, 12), dtype, seed=len(name))
    fallbacks = torch_neuronx.get_fallback_ops()
    before = gathers()
    got = VIEWS[name](x.to("neuron")).contiguous()
    assert same_bits(got.cpu(), VIEWS[name](x).contiguous())
    assert gathers() == before + 1
    assert torch_neuronx.get_fallback_ops() == fallbacks


def test_random_views_match_the_cpu() -> None:
    # Slices with steps of every axis, then a permutation, of random shapes,
    # read and written.
    rng = random.Random(7)
    fallbacks = torch_neuronx.get_fallback_ops()
    for _ in range(40):
        shape = [rng.randint(1, 9) for _ in range(rng.randint(1, 4))]
        x = torch.randn(shape)
        index = tuple(slice(rng.randint(0, n - 1), None, rng.randint(1, 3)) for n in shape)
        perm = list(range(len(shape)))
        rng.shuffle(perm)
        d = x.to("neuron")
        got = d[index].permute(perm).contiguous()
        assert torch.equal(got.cpu(), x[index].permute(perm).contiguous()), (shape, index, perm)
        value = torch.randn(x[index].permute(perm).shape)
        d[index].permute(perm).copy_(value.to("neuron"))
        x[index].permute(perm).copy_(value)
        assert torch.equal(d.cpu(), x), (shape, index, perm)
    assert torch_neuronx.get_fallback_ops() == fallbacks


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.int64], ids=str)
@pytest.mark.parametrize("name", [n for n in VIEWS if "broadcast" not in n])
def test_a_write_into_a_view_runs_on_the_device_and_keeps_the_other_bytes(name, dtype) -> None:
    x = random_bits((6, 10, 12), dtype, seed=1)
    d = x.to("neuron")
    value = random_bits(VIEWS[name](x).shape, dtype, seed=2)
    fallbacks = torch_neuronx.get_fallback_ops()
    before = scatters()
    VIEWS[name](d).copy_(value.to("neuron"))   # from the device
    VIEWS[name](x).copy_(value)
    assert same_bits(d.cpu(), x)
    VIEWS[name](d).copy_(value * 0 + 1)        # from the host
    VIEWS[name](x).copy_(value * 0 + 1)
    assert same_bits(d.cpu(), x)
    assert scatters() == before + 2
    assert torch_neuronx.get_fallback_ops() == fallbacks


def test_assignments_users_write_run_on_the_device() -> None:
    x = torch.randn(8, 16)
    d = x.to("neuron")
    before = scatters()
    x[:, 3:5] = 7.0
    d[:, 3:5] = 7.0                                   # fill_ of a slice
    x[::2, 1] = torch.arange(4.0)
    d[::2, 1] = torch.arange(4.0).to("neuron")        # copy_ into a strided view
    x[2:4] = x[0]
    d[2:4] = d[0]                                     # a broadcast source (gathered)
    x[:, 1:] = x[:, :-1].clone()
    d[:, 1:] = d[:, :-1]                              # overlapping source and destination
    assert torch.equal(d.cpu(), x)
    assert scatters() == before + 3  # rows 2 and 3 are contiguous


def test_a_broadcast_copy_converts_before_it_repeats() -> None:
    x = torch.randn(1, 33)
    before = device_ops("neuron::cast")
    got = x.to("neuron").expand(300, 33).to(torch.bfloat16)
    assert torch.equal(got.cpu(), x.expand(300, 33).to(torch.bfloat16))
    assert device_ops("neuron::cast") == before + 1


def test_a_shift_within_one_tensor_reads_before_it_writes() -> None:
    # Source and destination overlap in one storage: one DMA copy between
    # them is refused; a kernel reads the source first.
    x = torch.arange(20.0)
    d = x.to("neuron")
    d[1:] = d[:-1].clone()
    d[3:] = d[:-3]
    x[1:] = x[:-1].clone()
    x[3:] = x[:-3].clone()
    assert torch.equal(d.cpu(), x)


def test_a_write_into_a_broadcast_view_is_refused_as_on_the_cpu() -> None:
    with pytest.raises(RuntimeError, match="more than one element of the written-to tensor"):
        torch.zeros(3, device="neuron").expand(2, 3).copy_(torch.ones(2, 3, device="neuron"))


def test_overlapping_windows_run_on_the_cpu_and_say_so() -> None:
    x = torch.arange(12.0)
    got = x.to("neuron").as_strided((4, 5), (2, 1)).contiguous()
    assert torch.equal(got.cpu(), x.as_strided((4, 5), (2, 1)).contiguous())
    assert "neuron::gather_strided" in torch_neuronx.get_fallback_ops()


@pytest.mark.parametrize("dtype", [torch.bool, torch.uint8], ids=str)
def test_one_byte_views_go_through_the_host(dtype) -> None:
    x = torch.arange(60).reshape(6, 10) % 3 == 0
    x = x.to(dtype)
    before = gathers()
    got = x.to("neuron")[:, ::2].t().contiguous()
    assert torch.equal(got.cpu(), x[:, ::2].t().contiguous())
    assert gathers() == before


def test_a_strided_copy_does_not_wait_for_queued_work() -> None:
    a = torch.randn(384, 384, device="neuron")
    a[:, ::2].t().contiguous()  # the kernels compiled first
    a[::3, 5:9] = 1.0
    torch.neuron.synchronize()
    stream = torch.neuron.current_stream()
    for _ in range(40):
        a = a @ a * 1e-3
    product = a.clone()
    view = a[:, ::2].t().contiguous()   # a read through the host would wait for the matmuls
    a[::3, 5:9] = 1.0                   # and so would a write
    assert not stream.query(), "the copies waited for the queued work"
    want = product.cpu()
    assert torch.equal(view.cpu(), want[:, ::2].t().contiguous())
    want[::3, 5:9] = 1.0
    assert torch.equal(a.cpu(), want)


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


def test_arange_is_computed_by_the_host_and_written_without_waiting() -> None:
    a = torch.randn(384, 384, device="neuron")
    torch.neuron.synchronize()
    stream = torch.neuron.current_stream()
    for _ in range(40):
        a = a @ a * 1e-3
    fallbacks = torch_neuronx.get_fallback_ops()
    positions = torch.arange(77, device="neuron")
    steps = torch.arange(-1.5, 2.0, 0.25, device="neuron", dtype=torch.float32)
    assert not stream.query(), "arange waited for the queued work"
    assert torch_neuronx.get_fallback_ops() == fallbacks
    assert same_bits(positions.cpu(), torch.arange(77))
    assert same_bits(steps.cpu(), torch.arange(-1.5, 2.0, 0.25, dtype=torch.float32))
    out = torch.empty(3, dtype=torch.int32, device="neuron")
    torch.arange(10, 40, 3, out=out)  # resized, as on the CPU
    assert same_bits(out.cpu(), torch.arange(10, 40, 3, dtype=torch.int32))


@pytest.mark.parametrize("dtype,pad,value", [
    (torch.int64, (0, 1), -100),              # transformers' causal LM loss pads its labels
    (torch.int64, (2, 3, 1, 0), 7),
    (torch.float64, (1, 1, 2, 2, 0, 1), 0.5),
    (torch.int16, (3, 0), -1),
])
def test_padding_a_dtype_the_device_does_not_compute_in_is_a_fill_and_a_copy(dtype, pad,
                                                                              value) -> None:
    x = random_bits((2, 4, 6), dtype, seed=3)
    fallbacks = torch_neuronx.get_fallback_ops()
    before = device_ops("aten::constant_pad_nd")
    got = torch.nn.functional.pad(x.to("neuron"), pad, value=value)
    assert same_bits(got.cpu(), torch.nn.functional.pad(x, pad, value=value))
    assert device_ops("aten::constant_pad_nd") == before + 1
    assert torch_neuronx.get_fallback_ops() == fallbacks


def test_a_cropping_pad_of_int64_runs_on_the_cpu() -> None:
    x = torch.arange(24).reshape(4, 6)
    got = torch.nn.functional.pad(x.to("neuron"), (-1, 2), value=5)
    assert torch.equal(got.cpu(), torch.nn.functional.pad(x, (-1, 2), value=5))
    assert "aten::constant_pad_nd" in torch_neuronx.get_fallback_ops()
