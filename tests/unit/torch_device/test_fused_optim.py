# SPDX-License-Identifier: MIT
"""torch.optim's fused Adam, AdamW, SGD and Adagrad (`fused=True`) on the
device: a program per group of parameters, updating parameters, moments,
momentum buffers and sums in their tensors, as PyTorch's own fused
kernels on the CPU do."""

from typing import Dict, List, Tuple

import pytest
import torch

import torch_neuronx
from torch_neuronx.eager import kernels

# Mixed shapes, more tensors than one group holds.
SHAPES = [(64, 48), (48,), (300, 20), (5, 3), (7,)] * 3


def train(device: str, optimizer: str, steps: int = 4, **options) -> Tuple[List[torch.Tensor],
                                                                           Dict[str, int]]:
    """The parameters and moments after @p steps with a scheduler changing
    the rate at every step, and the device's compiles per step."""
    gen = torch.Generator().manual_seed(0)
    params = [torch.nn.Parameter(torch.randn(s, generator=gen).to(device)) for s in SHAPES]
    grads = [torch.randn(s, generator=gen) for s in SHAPES]
    make = {"adamw": torch.optim.AdamW, "adam": torch.optim.Adam, "sgd": torch.optim.SGD,
            "adagrad": torch.optim.Adagrad}
    lr = options.pop("lr", 1e-2)
    if isinstance(lr, torch.Tensor):  # (the scheduler fills it: one per run)
        lr = lr.clone()
    opt = make[optimizer](params, lr=lr, fused=True, **options)
    schedule = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: 1 / (s + 1))
    compiles = {}
    for step in range(steps):
        before = kernels.compiles
        for p, g in zip(params, grads):
            p.grad = (g * (step + 1)).to(device)
        opt.step()
        schedule.step()
        compiles[step] = kernels.compiles - before
    state = [v for p in params for k, v in sorted(opt.state[p].items())
             if isinstance(v, torch.Tensor) and v.dim() > 0]
    return [t.detach().cpu() for t in params + state], compiles


CASES = [("adamw", {}), ("adamw", {"weight_decay": 0.1}), ("adam", {"weight_decay": 0.1}),
         ("adamw", {"amsgrad": True}), ("adam", {"maximize": True}),
         ("adamw", {"betas": (0.3, 0.99)}),  # (lerp's other form)
         ("sgd", {}), ("sgd", {"momentum": 0.9}),
         ("sgd", {"momentum": 0.9, "dampening": 0.3, "weight_decay": 0.01}),
         ("sgd", {"momentum": 0.8, "nesterov": True, "weight_decay": 0.1, "maximize": True}),
         ("sgd", {"momentum": 0.9, "lr": torch.tensor(0.05)}),  # (the .tensor_lr overload)
         ("adagrad", {}), ("adagrad", {"lr_decay": 0.1, "weight_decay": 0.01}),
         ("adagrad", {"maximize": True, "initial_accumulator_value": 0.5, "eps": 1e-4})]


@pytest.mark.parametrize("optimizer,options", CASES, ids=[f"{o}-{k}" for o, k in CASES])
def test_fused_updates_as_pytorchs_fused_kernel_on_the_cpu(optimizer: str, options) -> None:
    want, _ = train("cpu", optimizer, **dict(options))
    name = f"aten::_fused_{optimizer}_"
    before = torch_neuronx.get_device_ops().get(name, 0)
    fallbacks = torch_neuronx.get_fallback_ops()
    got, compiles = train("neuron", optimizer, **dict(options))
    programs = torch_neuronx.get_device_ops().get(name, 0) - before
    assert len(got) == len(want)
    for i, (a, b) in enumerate(zip(got, want)):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-6, msg=f"tensor {i}")
    # a program per group of parameters, every step; a new rate compiles
    # nothing (SGD's first step with momentum has a program of its own)
    assert 1 <= programs / 4 < len(SHAPES) // 2
    assert compiles[2] == compiles[3] == 0, compiles
    assert torch_neuronx.get_fallback_ops() == fallbacks


def fused_call(device: str, grad_scale: float, found_inf: float) -> List[torch.Tensor]:
    gen = torch.Generator().manual_seed(1)
    lists = [[torch.randn(s, generator=gen).to(device) for s in SHAPES[:5]] for _ in range(4)]
    lists[3] = [t.abs() for t in lists[3]]  # exp_avg_sq
    steps = [torch.tensor(3.0, device=device) for _ in SHAPES[:5]]
    torch._fused_adamw_(*lists, [], steps, lr=0.01, beta1=0.9, beta2=0.999, weight_decay=0.01,
                        eps=1e-8, amsgrad=False, maximize=False,
                        grad_scale=torch.tensor(grad_scale, device=device),
                        found_inf=torch.tensor(found_inf, device=device))
    return [t.cpu() for lst in lists for t in lst]


def fused_sgd_call(device: str, grad_scale: float, found_inf: float) -> List[torch.Tensor]:
    gen = torch.Generator().manual_seed(4)
    lists = [[torch.randn(s, generator=gen).to(device) for s in SHAPES[:5]] for _ in range(3)]
    torch._fused_sgd_(*lists, weight_decay=0.01, momentum=0.9, lr=0.1, dampening=0.1,
                      nesterov=True, maximize=False, is_first_step=False,
                      grad_scale=torch.tensor(grad_scale, device=device),
                      found_inf=torch.tensor(found_inf, device=device))
    return [t.cpu() for lst in lists for t in lst]


def fused_adagrad_call(device: str, grad_scale: float, found_inf: float) -> List[torch.Tensor]:
    gen = torch.Generator().manual_seed(5)
    lists = [[torch.randn(s, generator=gen).to(device) for s in SHAPES[:5]] for _ in range(3)]
    lists[2] = [t.abs() for t in lists[2]]  # state_sum
    steps = [torch.tensor(3.0, device=device) for _ in SHAPES[:5]]
    torch._fused_adagrad_(*lists, steps, lr=0.1, lr_decay=0.05, weight_decay=0.01, eps=1e-10,
                          maximize=False, grad_scale=torch.tensor(grad_scale, device=device),
                          found_inf=torch.tensor(found_inf, device=device))
    return [t.cpu() for lst in lists for t in lst]


@pytest.mark.parametrize("call", [fused_call, fused_sgd_call, fused_adagrad_call],
                         ids=["adamw", "sgd", "adagrad"])
@pytest.mark.parametrize("found_inf", [0.0, 1.0])
def test_a_grad_scale_unscales_and_found_inf_skips_as_on_the_cpu(call, found_inf: float) -> None:
    want = call("cpu", 4.0, found_inf)
    got = call("neuron", 4.0, found_inf)
    for i, (a, b) in enumerate(zip(got, want)):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-6, msg=f"tensor {i}")


@pytest.mark.parametrize("make", [lambda p: torch.optim.AdamW(p, lr=1e-2, fused=True),
                                  lambda p: torch.optim.SGD(p, lr=0.1, momentum=0.9, fused=True),
                                  lambda p: torch.optim.Adagrad(p, lr=0.1, fused=True)],
                         ids=["adamw", "sgd", "adagrad"])
def test_bfloat16_parameters_update_in_float32_as_on_the_cpu(make) -> None:
    def run(device: str) -> List[torch.Tensor]:
        gen = torch.Generator().manual_seed(2)
        params = [torch.nn.Parameter(torch.randn(s, generator=gen).bfloat16().to(device))
                  for s in SHAPES[:5]]
        opt = make(params)
        for _ in range(2):
            for p in params:
                p.grad = torch.randn(p.shape, generator=gen).bfloat16().to(device)
            opt.step()
        return [p.detach().cpu().float() for p in params]

    fallbacks = torch_neuronx.get_fallback_ops()
    for a, b in zip(run("neuron"), run("cpu")):
        # (one rounding to bfloat16 apart at most)
        torch.testing.assert_close(a, b, rtol=2 ** -7, atol=1e-6)
    assert torch_neuronx.get_fallback_ops() == fallbacks


def test_strided_parameters_and_steps_on_the_host_update_as_on_the_cpu() -> None:
    def run(device: str) -> List[torch.Tensor]:
        gen = torch.Generator().manual_seed(3)
        lists = [[torch.randn(40, 30, generator=gen).to(device).t() for _ in range(3)]
                 for _ in range(4)]
        lists[3] = [t.abs() for t in lists[3]]
        steps = [torch.tensor(2.0) for _ in range(3)]  # (on the host)
        torch._fused_adamw_(*lists, [], steps, lr=0.01, beta1=0.9, beta2=0.999,
                            weight_decay=0.01, eps=1e-8, amsgrad=False, maximize=False)
        return [t.cpu() for lst in lists for t in lst]

    for i, (a, b) in enumerate(zip(run("neuron"), run("cpu"))):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-6, msg=f"tensor {i}")


def test_lists_of_different_lengths_are_refused() -> None:
    t = [torch.zeros(3, device="neuron") for _ in range(2)]
    with pytest.raises(RuntimeError, match="_fused_adamw_: its tensor lists must have one"):
        torch._fused_adamw_(t, t[:1], t, t, [], t, lr=0.1, beta1=0.9, beta2=0.99,
                            weight_decay=0.0, eps=1e-8, amsgrad=False, maximize=False)
    with pytest.raises(RuntimeError, match=r"_fused_sgd_: .* not \[2, 2, 1\]"):
        torch._fused_sgd_(t, t, t[:1], weight_decay=0.0, momentum=0.9, lr=0.1, dampening=0.0,
                          nesterov=False, maximize=False, is_first_step=False)
