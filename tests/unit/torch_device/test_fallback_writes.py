# SPDX-License-Identifier: MIT
"""Operators run on the CPU for the device that write their inputs: every
tensor they write gets its new value back on the device. Lists of
tensors (GradScaler's `aten::_amp_foreach_non_finite_check_and_unscale_`),
so `torch.amp.GradScaler("neuron")` trains as on the CPU (the fused
optimizers run on the device: test_fused_optim.py); and arguments a
schema does not mark as written (`aten::native_batch_norm`'s running
statistics), so batch norm's running mean and variance follow training
as on the CPU."""

from typing import List

import pytest
import torch

import torch_neuronx

SHAPES = [(8, 5), (5,), (3, 4, 2)]


def unscaled(device: str, poison: bool) -> List[torch.Tensor]:
    """GradScaler's check and unscale of a list of gradients (one holding
    an inf when @p poison): the gradients and the flag it writes."""
    gen = torch.Generator().manual_seed(0)
    grads = [torch.randn(s, generator=gen).to(device) for s in SHAPES]
    if poison:
        grads[1][2] = float("inf")
    found_inf = torch.zeros(1, device=device)
    torch._amp_foreach_non_finite_check_and_unscale_(grads, found_inf,
                                                     torch.full((1,), 0.25, device=device))
    return [t.cpu() for t in grads + [found_inf]]


@pytest.mark.parametrize("poison", [False, True])
def test_a_list_written_on_the_cpu_is_written_back_to_the_device(poison: bool) -> None:
    name = "aten::_amp_foreach_non_finite_check_and_unscale_"
    before = torch_neuronx.get_fallback_ops().get(name, 0)
    got = unscaled("neuron", poison)
    assert torch_neuronx.get_fallback_ops().get(name, 0) == before + 1
    want = unscaled("cpu", poison)
    assert len(got) == len(want)
    for i, (a, b) in enumerate(zip(got, want)):
        torch.testing.assert_close(a, b, rtol=0, atol=0, msg=f"tensor {i}")


def scaled_training(device: str, poison_step: int) -> List[torch.Tensor]:
    """Four steps of SGD under a GradScaler; the gradients of step
    @p poison_step (if any) hold an inf, so that step is skipped and the
    scale backs off."""
    gen = torch.Generator().manual_seed(2)
    model = torch.nn.Linear(6, 3)
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(torch.randn(p.shape, generator=gen))
    model.to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.5)
    scaler = torch.amp.GradScaler(device, init_scale=2.0 ** 8, growth_interval=2)
    x, y = torch.randn(16, 6, generator=gen), torch.randn(16, 3, generator=gen)
    scales = []
    for step in range(4):
        loss = torch.nn.functional.mse_loss(model(x.to(device)), y.to(device))
        scaler.scale(loss).backward()
        if step == poison_step:
            model.weight.grad[0, 0] = float("inf")
        scaler.step(opt)
        scaler.update()
        opt.zero_grad()
        scales.append(torch.tensor([scaler.get_scale()]))
    return [p.detach().cpu() for p in model.parameters()] + scales


@pytest.mark.parametrize("poison_step", [-1, 1])
def test_grad_scaler_unscales_skips_and_rescales_as_on_the_cpu(poison_step: int) -> None:
    want = scaled_training("cpu", poison_step)
    got = scaled_training("neuron", poison_step)
    for i, (a, b) in enumerate(zip(got, want)):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-6, msg=f"tensor {i}")
    # the scale grew every 2 clean steps, and halved at an inf
    assert [s.item() for s in got[-4:]] == ([256.0, 512.0, 512.0, 1024.0] if poison_step < 0
                                             else [256.0, 128.0, 128.0, 256.0])


def batch_norm_run(device: str, module: torch.nn.Module, shape: tuple) -> List[torch.Tensor]:
    """Three training steps' outputs, the running statistics after them,
    and an output in eval mode (which uses those statistics)."""
    gen = torch.Generator().manual_seed(3)
    module = module.to(device)
    outs = [module(torch.randn(shape, generator=gen).to(device)).cpu() for _ in range(3)]
    module.eval()
    outs.append(module(torch.randn(shape, generator=gen).to(device)).cpu())
    return outs + [b.cpu() for b in module.buffers()]


NORMS = {
    "batchnorm1d": (lambda: torch.nn.BatchNorm1d(5), (8, 5)),
    "batchnorm2d-cumulative": (lambda: torch.nn.BatchNorm2d(3, momentum=None), (4, 3, 5, 5)),
    "instancenorm1d-tracked": (lambda: torch.nn.InstanceNorm1d(4, track_running_stats=True),
                               (6, 4, 9)),
}


@pytest.mark.parametrize("name", list(NORMS))
def test_batch_norm_updates_its_running_statistics_as_on_the_cpu(name: str) -> None:
    make, shape = NORMS[name]
    want = batch_norm_run("cpu", make(), shape)
    got = batch_norm_run("neuron", make(), shape)
    assert len(got) == len(want)
    for i, (a, b) in enumerate(zip(got, want)):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-5, msg=f"tensor {i}")
