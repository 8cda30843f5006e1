# SPDX-License-Identifier: MIT
"""Embedding's forward and index_select along dim 0 on the device
(DMA_GATHER, torch_neuronx/rng.py and lowering/ops/sampling.py): equal to
the CPU bit for bit in float32 and bfloat16, with int64 and int32 ids,
repeated ids, ids of 0, 1 and 2 dimensions, tables of 1, 2 and 3
dimensions and one larger than a core's SBUF; as device kernels, not
fallbacks; without reading the ids to the host (a fault of an earlier
call is not raised by the next one, only at the synchronization); an id
outside the table (beyond it, negative, or of 2^32 and more) raising an
error that names the operator at the next synchronization, after which
the device goes on; forms the device does not take run on the CPU."""

from typing import Callable, Dict, Tuple

import pytest
import torch
import torch.nn.functional as F

import torch_neuronx


def _ops_since(before: Dict[str, int]) -> Dict[str, int]:
    now = torch_neuronx.get_device_ops()
    return {k: v - before.get(k, 0) for k, v in now.items() if v != before.get(k, 0)}


def _on_device(fn: Callable[..., torch.Tensor], *args: torch.Tensor, op: str) -> torch.Tensor:
    """fn(*args moved to the device) on the host, checking that it ran as
    the device's kernel of @p op (and the gather under it), with no
    fallback."""
    fallbacks = dict(torch_neuronx.get_fallback_ops())
    before = torch_neuronx.get_device_ops()
    got = fn(*(a.to("neuron") for a in args)).cpu()
    ran = _ops_since(before)
    assert ran.get(f"aten::{op}") == 1, ran
    assert ran.get(f"neuron::{op}") == 1, ran
    assert torch_neuronx.get_fallback_ops() == fallbacks
    return got


def _ids(shape: Tuple[int, ...], rows: int, dtype: torch.dtype, seed: int) -> torch.Tensor:
    ids = torch.randint(0, rows, shape, generator=torch.Generator().manual_seed(seed))
    flat = ids.view(-1)
    flat[0], flat[-1] = 0, rows - 1  # both ends of the table
    if flat.numel() > 3:
        flat[1] = flat[2]  # repeated
    return ids.to(dtype)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=str)
@pytest.mark.parametrize("id_dtype", [torch.int64, torch.int32], ids=str)
@pytest.mark.parametrize("shape", [(1,), (77,), (3, 129), (2, 200)], ids=str)
def test_embedding_equals_the_cpu(dtype: torch.dtype, id_dtype: torch.dtype,
                                  shape: Tuple[int, ...]) -> None:
    weight = torch.randn(300, 65, generator=torch.Generator().manual_seed(1)).to(dtype)
    ids = _ids(shape, 300, id_dtype, 2)
    got = _on_device(F.embedding, ids, weight, op="embedding")
    want = F.embedding(ids, weight)
    assert got.dtype == dtype and got.shape == want.shape
    assert torch.equal(got, want)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=str)
@pytest.mark.parametrize("id_dtype", [torch.int64, torch.int32], ids=str)
@pytest.mark.parametrize("table", [(40,), (40, 9), (40, 3, 5)], ids=str)
def test_index_select_along_dim_0_equals_the_cpu(dtype: torch.dtype, id_dtype: torch.dtype,
                                                 table: Tuple[int, ...]) -> None:
    x = torch.randn(*table, generator=torch.Generator().manual_seed(3)).to(dtype)
    for shape, dim in (((130,), 0), ((5,), -len(table)), ((), 0)):
        index = _ids(shape, table[0], id_dtype, 4) if shape else torch.tensor(7, dtype=id_dtype)
        got = _on_device(lambda a, i: a.index_select(dim, i), x, index, op="index_select")
        assert torch.equal(got, x.index_select(dim, index))


def test_a_table_larger_than_sbuf() -> None:
    """32 MiB of float32 (a core's SBUF is 24 MiB): read where it is."""
    weight = torch.randn(16384, 512, generator=torch.Generator().manual_seed(5))
    ids = _ids((4, 100), 16384, torch.int64, 6)
    assert torch.equal(_on_device(F.embedding, ids, weight, op="embedding"),
                       F.embedding(ids, weight))


def test_nn_embedding_forward_and_backward_with_padding_idx() -> None:
    """padding_idx changes only the backward: its row is read as it is."""
    torch.manual_seed(7)
    cpu = torch.nn.Embedding(50, 16, padding_idx=3)
    with torch.no_grad():
        cpu.weight[3] = 1.5  # not zero, so that reading it shows
    dev = torch.nn.Embedding(50, 16, padding_idx=3).to("neuron")
    dev.load_state_dict(cpu.state_dict())
    ids = torch.tensor([[3, 1, 3, 49], [0, 2, 2, 3]])
    want = cpu(ids)
    got = dev(ids.to("neuron"))
    assert torch.equal(got.cpu(), want.detach())
    g = torch.randn(want.shape)
    want.backward(g)
    got.backward(g.to("neuron"))
    torch.testing.assert_close(dev.weight.grad.cpu(), cpu.weight.grad, rtol=1e-6, atol=1e-6)
    assert float(dev.weight.grad.cpu()[3].abs().sum()) == 0


def test_no_synchronization_and_out_of_range_ids_fail_at_the_next_one() -> None:
    weight = torch.randn(50, 8).to("neuron")
    ok = torch.tensor([1, 49]).to("neuron")
    torch.neuron.synchronize()
    for bad in (50, -1, 1 << 32, -(1 << 32) + 1, 1 << 40):
        ids = torch.tensor([1, bad, 2]).to("neuron")
        F.embedding(ids, weight)  # returns: nothing of the ids is read to the host
        # the next call does not synchronize either: it does not raise the
        # fault of the one before
        good = F.embedding(ok, weight)
        with pytest.raises(RuntimeError, match="program 'neuron_embedding'.*BINDING_RANGE"):
            torch.neuron.synchronize()
        # and the device goes on
        assert torch.equal(good.cpu(), weight.cpu()[[1, 49]])
    for bad in (40, -3):
        x = torch.randn(40, 3).to("neuron")
        x.index_select(0, torch.tensor([bad], dtype=torch.int32).to("neuron"))
        with pytest.raises(RuntimeError, match="program 'neuron_index_select'.*BINDING_RANGE"):
            torch.neuron.synchronize()
    assert torch.equal(F.embedding(ok, weight).cpu(), weight.cpu()[[1, 49]])


def test_what_the_device_does_not_gather_runs_on_the_cpu() -> None:
    from torch_neuronx.eager import fallback
    x = torch.randn(6, 5)
    index = torch.tensor([4, 0, 4])
    cases = ((lambda: x.double().to("neuron").index_select(0, index.to("neuron")),
              x.double().index_select(0, index), "aten::index_select", "a torch.float64 table"),
             (lambda: x.to("neuron").index_select(1, index.to("neuron")),
              x.index_select(1, index), "aten::index_select",
              "dim=1 (the device gathers along dim 0)"),
             (lambda: F.embedding(index.to("neuron"), x.double().to("neuron")),
              F.embedding(index, x.double()), "aten::embedding", "a torch.float64 table"))
    for fn, want, op, why in cases:
        before = fallback.fallback_calls_by_reason().get((op, why), 0)
        assert torch.equal(fn().cpu(), want)
        assert fallback.fallback_calls_by_reason().get((op, why), 0) == before + 1, (op, why)
