# SPDX-License-Identifier: MIT
"""Operators run on the CPU for the device that write their inputs: every
tensor they write gets its new value back on the device. Lists of
tensors (`aten::_fused_adagrad_`, GradScaler's
`aten::_amp_foreach_non_finite_check_and_unscale_`), so torch.optim's
fused Adagrad and `torch.amp.GradScaler("neuron")` train as on the CPU
(fused SGD runs on the device: test_fused_optim.py); and arguments a schema does not mark as written
(`aten::native_batch_norm`'s running statistics), so batch norm's
running mean and variance follow training as on the CPU."""

from typing import Callable, List

import pytest
import torch

import torch_neuronx  # noqa: F401

SHAPES = [(8, 5), (5,), (3, 4, 2)]


def params_after(device: str, make: Callable[[List[torch.nn.Parameter]], torch.optim.Optimizer],
                 steps: int = 3) -> List[torch.Tensor]:
    gen = torch.Generator().manual_seed(0)
    params = [torch.nn.Parameter(torch.randn(s, generator=gen).to(device)) for s in SHAPES]
    grads = [torch.randn(s, generator=gen) for s in SHAPES]
    opt = make(params)
    for step in range(steps):
        for p, g in zip(params, grads):
            p.grad = (g * (step + 1)).to(device)
        opt.step()
    state = [v for p in params for v in opt.state[p].values()
             if isinstance(v, torch.Tensor) and v.dim() > 0]
    return [t.detach().cpu() for t in params + state]


OPTIMIZERS = {
    "adagrad": lambda p: torch.optim.Adagrad(p, lr=0.1, fused=True),
    "adagrad-decay": lambda p: torch.optim.Adagrad(p, lr=0.1, lr_decay=0.01, weight_decay=0.01,
                                                   fused=True),
}


@pytest.mark.parametrize("name", list(OPTIMIZERS))
def test_fused_optimizers_on_the_cpu_update_the_devices_tensors(name: str) -> None:
    want = params_after("cpu", OPTIMIZERS[name])
    got = params_after("neuron", OPTIMIZERS[name])
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
