# SPDX-License-Identifier: MIT
"""Dropout and embedding backward on the device (ISA 1.2's RANDOM and
DMA_SCATTER_ADD, torch_neuronx/rng.py): F.dropout in training runs on the
device from the device generator's seed and Philox offset, keeps 1 - p of
the elements scaled by 1/(1 - p), repeats itself after manual_seed, draws
a new mask on every call, equals the CPU kernel of the same Philox stream
bit for bit (which holds Random123's known answers), and its gradient is
the mask scaled; embedding's backward adds the gradient rows of repeated
ids on the device, equal to the CPU's, and refuses ids out of range."""

from typing import Dict

import pytest
import torch
import torch.nn.functional as F

import torch_neuronx
from torch_neuronx import philox


def _ops_since(before: Dict[str, int]) -> Dict[str, int]:
    now = torch_neuronx.get_device_ops()
    return {k: v - before.get(k, 0) for k, v in now.items() if v != before.get(k, 0)}


def test_philox_known_answers() -> None:
    # Random123's kat_vectors: philox4x32 10 and 7 rounds
    cases = [
        (10, [0, 0, 0, 0], [0, 0], [0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8]),
        (10, [0xFFFFFFFF] * 4, [0xFFFFFFFF] * 2, [0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD]),
        (10, [0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344], [0xA4093822, 0x299F31D0],
         [0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1]),
        (7, [0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344], [0xA4093822, 0x299F31D0],
         [0x4DFCCABA, 0x190A87F0, 0xC47362BA, 0xB6B5242A]),
    ]
    for rounds, ctr, key, want in cases:
        got = philox.philox4x32(tuple(torch.tensor([c]) for c in ctr), (key[0], key[1]), rounds)
        assert [int(w) for w in got] == want
        wrong = philox.philox4x32(tuple(torch.tensor([c]) for c in ctr), (key[0], key[1]),
                                  rounds - 1)
        assert [int(w) for w in wrong] != want


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=str)
def test_dropout_on_the_device(dtype: torch.dtype) -> None:
    x = torch.randn(96, 131, generator=torch.Generator().manual_seed(1)).to(dtype)
    xd = x.to("neuron")
    torch.neuron.manual_seed(1234)
    before = torch_neuronx.get_device_ops()
    fallbacks = dict(torch_neuronx.get_fallback_ops())
    y = F.dropout(xd, 0.3, training=True).cpu()
    assert _ops_since(before).get("neuron::philox_dropout") == 1
    assert torch_neuronx.get_fallback_ops() == fallbacks
    kept = y != 0
    # 12576 draws: the kept fraction's standard deviation is 0.004
    assert abs(kept.float().mean().item() - 0.7) < 0.02
    scale = torch.tensor(1.0) / (1 - torch.tensor(0.3))
    assert torch.equal(y[kept], (x.float() * scale).to(dtype)[kept])
    # the stream of seed 1234, offset 0, as the CPU computes it
    key = torch.tensor([1234, 0, 0, 0], dtype=torch.int32)
    want, mask = torch.ops.neuron.philox_dropout(x, key, 0.3)
    assert torch.equal(y, want) and torch.equal(kept | (x == 0), mask | (x == 0))


def test_dropout_reproducible_and_new_per_call() -> None:
    x = torch.randn(64, 64, device="neuron")
    torch.neuron.manual_seed(7)
    gen = torch.neuron.default_generator()
    assert gen.get_offset() == 0
    a = F.dropout(x, 0.5, training=True).cpu()
    b = F.dropout(x, 0.5, training=True).cpu()
    assert gen.get_offset() == 2
    # consecutive calls: independent masks agree on about half the elements
    assert (a == b).float().mean().item() < 0.6
    torch.neuron.manual_seed(7)
    assert torch.equal(F.dropout(x, 0.5, training=True).cpu(), a)
    assert torch.equal(F.dropout(x, 0.5, training=True).cpu(), b)
    torch.neuron.manual_seed(8)
    assert not torch.equal(F.dropout(x, 0.5, training=True).cpu(), a)
    # an operator that falls back to the CPU keeps the offset
    torch.neuron.manual_seed(7)
    torch.randn(3, device="neuron")
    assert torch.equal(F.dropout(x, 0.5, training=True).cpu(), a)
    # evaluation, p = 0 and p = 1 need no random numbers
    assert torch.equal(F.dropout(x, 0.5, training=False).cpu(), x.cpu())
    assert torch.equal(F.dropout(x, 0.0, training=True).cpu(), x.cpu())
    assert not F.dropout(x, 1.0, training=True).cpu().any()


def test_dropout_gradient() -> None:
    x = torch.randn(40, 70, device="neuron", requires_grad=True)
    g = torch.randn(40, 70)
    y = F.dropout(x, 0.2, training=True)
    kept = (y != 0).cpu()
    (y * g.to("neuron")).sum().backward()
    assert torch.equal(x.grad.cpu(), g * kept.float() * (1 / (1 - 0.2)))


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=str)
def test_embedding_backward_on_the_device(dtype: torch.dtype) -> None:
    gen = torch.Generator().manual_seed(5)
    weight = torch.randn(300, 48, generator=gen).to(dtype)
    ids = torch.randint(0, 40, (4, 77), generator=gen)  # every id repeats
    ids[0, 0], ids[-1, -1] = 0, 299
    grad = torch.randn(4, 77, 48, generator=gen).to(dtype)
    on_cpu = weight.clone().requires_grad_()
    F.embedding(ids, on_cpu).backward(grad)
    on_device = weight.to("neuron").requires_grad_()
    before = torch_neuronx.get_device_ops()
    F.embedding(ids.to("neuron"), on_device).backward(grad.to("neuron"))
    assert _ops_since(before).get("neuron::embedding_backward") == 1
    got = on_device.grad.cpu().float()
    want = on_cpu.grad.float()
    if dtype == torch.float32:
        # the same additions in the same (row) order
        torch.testing.assert_close(got, want, rtol=0, atol=0)
    else:
        # each addition rounded to bfloat16 on the device; the CPU sums in
        # float32: within the carried bound gamma_k * sum |terms|
        k = torch.bincount(ids.reshape(-1), minlength=300).float().reshape(-1, 1)
        total = torch.zeros(300, 48).index_add_(0, ids.reshape(-1),
                                                 grad.float().abs().reshape(-1, 48))
        u = 2.0 ** -8
        assert ((got - want).abs() <= k * u / (1 - k * u) * total + 2 * u * want.abs()).all()


def test_embedding_backward_padding_and_range() -> None:
    weight = torch.randn(20, 8)
    ids = torch.tensor([[1, 2, 2, 0], [5, 0, 19, 2]])
    grad = torch.randn(2, 4, 8)
    on_cpu = weight.clone().requires_grad_()
    F.embedding(ids, on_cpu, padding_idx=2).backward(grad)
    on_device = weight.to("neuron").requires_grad_()
    F.embedding(ids.to("neuron"), on_device, padding_idx=2).backward(grad.to("neuron"))
    assert torch.equal(on_device.grad.cpu(), on_cpu.grad)
    with pytest.raises(IndexError, match="index 20 is out of range for 20 rows"):
        torch.ops.aten.embedding_dense_backward(grad.to("neuron"),
                                                torch.tensor([[1, 2, 3, 20]] * 2).to("neuron"),
                                                20, -1, False)


def test_rng_state_holds_the_offset() -> None:
    x = torch.randn(32, 48, device="neuron")
    torch.neuron.manual_seed(11)
    F.dropout(x, 0.5, training=True)
    state = torch.neuron.get_rng_state()
    a = F.dropout(x, 0.5, training=True).cpu()
    torch.neuron.set_rng_state(state)
    assert torch.equal(F.dropout(x, 0.5, training=True).cpu(), a)
    # a random operator on the CPU's generator keeps the offset, and its
    # own stream continues
    torch.neuron.set_rng_state(state)
    r1 = torch.rand(5, device="neuron").cpu()
    assert torch.equal(F.dropout(x, 0.5, training=True).cpu(), a)
    torch.neuron.set_rng_state(state)
    assert torch.equal(torch.rand(5, device="neuron").cpu(), r1)
    with pytest.raises(RuntimeError, match="Philox offset"):
        torch.neuron.set_rng_state(state[:-8])


def test_checkpoint_recomputes_the_same_masks() -> None:
    # torch.utils.checkpoint restores the device's RNG state to recompute
    # the forward: the same dropout masks, the same gradient as without it
    w = torch.randn(48, 48)

    def block(x: torch.Tensor) -> torch.Tensor:
        return F.dropout(torch.tanh(x @ w.to(x.device)), 0.3, training=True)

    x = torch.randn(16, 48)
    grads = []
    for checkpointed in (False, True):
        torch.neuron.manual_seed(21)
        xd = x.to("neuron").requires_grad_()
        y = torch.utils.checkpoint.checkpoint(block, xd, use_reentrant=False) \
            if checkpointed else block(xd)
        (y * y).sum().backward()
        grads.append(xd.grad.cpu())
    assert torch.equal(grads[0], grads[1])


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=str)
def test_index_add_int32_ids_on_the_device(dtype: torch.dtype) -> None:
    gen = torch.Generator().manual_seed(9)
    base = torch.randn(30, 7, generator=gen).to(dtype)
    src = torch.randn(50, 7, generator=gen).to(dtype)
    ids = torch.randint(0, 30, (50,), generator=gen, dtype=torch.int32)
    before = torch_neuronx.get_device_ops()
    got = base.to("neuron").index_add(0, ids.to("neuron"), src.to("neuron"), alpha=2.0).cpu()
    assert _ops_since(before).get("aten::index_add") == 1
    # in row order, one rounding per addition (fp32: as the CPU's loop)
    want = base.float()
    for i, r in enumerate(ids.tolist()):
        want[r] = (want[r] + (src[i].float() * 2).to(dtype).float()).to(dtype).float()
    assert torch.equal(got.float(), want)
    ids[3] = 30  # beyond the rows: the job faults
    with pytest.raises(RuntimeError, match="BINDING_RANGE"):
        base.to("neuron").index_add(0, ids.to("neuron"), src.to("neuron")).cpu()
    # and the device goes on
    assert torch.equal((base.to("neuron") + src[:30].to("neuron")).cpu(), base + src[:30])
