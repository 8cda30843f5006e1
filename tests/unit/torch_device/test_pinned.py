# SPDX-License-Identifier: MIT
"""Pinned host memory of the `neuron` device (csrc/runtime/pinned.cpp):
tensor.pin_memory(), DataLoader(pin_memory=True), and non_blocking copies
from and to it in the stream's order, as a CUDA training loop uses them."""

import pytest
import torch
from torch.utils.data import DataLoader, TensorDataset

pytestmark = pytest.mark.skipif(not torch.neuron.is_available(), reason="no neuron device")


def test_pin_memory_keeps_the_values_in_pinned_memory() -> None:
    x = torch.randn(33, 7)
    p = x.pin_memory()
    assert p.is_pinned() and not x.is_pinned()
    assert torch.equal(p, x)
    assert p[5:].is_pinned()  # a view inside the allocation


def test_a_data_loader_pins_its_batches_for_the_device() -> None:
    data = torch.randn(12, 5)
    loader = DataLoader(TensorDataset(data), batch_size=4, pin_memory=True)
    got = []
    for (batch,) in loader:
        assert batch.is_pinned()
        got.append(batch.to("neuron", non_blocking=True) * 2.0)
    torch.neuron.synchronize()
    assert torch.equal(torch.cat([g.cpu() for g in got]), data * 2.0)


def test_a_non_blocking_copy_from_pinned_memory_runs_in_the_stream_order() -> None:
    x = torch.randn(64, 64).pin_memory()
    expected = x.clone()
    on_device = x.to("neuron", non_blocking=True)
    torch.neuron.synchronize()
    x.fill_(0)  # after the copy completed: the device keeps the old values
    assert torch.equal(on_device.cpu(), expected)


def test_a_non_blocking_copy_to_the_host_is_read_after_synchronizing() -> None:
    a, b = torch.randn(40, 24), torch.randn(40, 24)
    y = a.to("neuron") + b.to("neuron")
    host = y.to("cpu", non_blocking=True)
    assert host.is_pinned()
    done = torch.neuron.Event()
    done.record()
    done.synchronize()
    assert torch.equal(host, a + b)


def test_other_non_blocking_copies_take_the_staged_path() -> None:
    x = torch.randn(8, 9).pin_memory()
    d = torch.empty(8, 9, dtype=torch.bfloat16, device="neuron")
    d.copy_(x, non_blocking=True)  # a cast
    t = torch.empty(9, 8, device="neuron").t()
    t.copy_(x, non_blocking=True)  # a strided destination
    plain = torch.randn(8, 9)
    e = plain.to("neuron", non_blocking=True)  # not pinned
    torch.neuron.synchronize()
    assert torch.equal(d.cpu(), x.to(torch.bfloat16))
    assert torch.equal(t.cpu(), x)
    assert torch.equal(e.cpu(), plain)
