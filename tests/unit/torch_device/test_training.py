# SPDX-License-Identifier: MIT
"""The standard eager training loop on "neuron": forward, loss.backward(),
clip_grad_norm_ and an optimizer step give the CPU's losses and parameters
step by step (fp32; matmuls accumulate in another order than torch's, hence
the tolerance), with the backward and the optimizer's update on the device."""

from typing import Callable, Dict, List, Tuple

import pytest
import torch
import torch.nn.functional as F

import torch_neuronx
from torch_neuronx.eager.fallback import fallback_calls_by_reason

STEPS = 5
# fp32 on both sides; the device's matmuls and reductions sum in another order
RTOL, ATOL = 1e-4, 1e-5

OPTIMIZERS: Dict[str, Callable[..., torch.optim.Optimizer]] = {
    "sgd": lambda p: torch.optim.SGD(p, lr=0.1, momentum=0.9),
    "adamw": lambda p: torch.optim.AdamW(p, lr=1e-2, weight_decay=0.1),
}
# What the optimizers' updates run as: their foreach forms, a program per
# group of parameters (eager/foreach.py).
UPDATE_OPS = {"sgd": {"aten::_foreach_mul.Scalar", "aten::_foreach_add.List"},
              "adamw": {"aten::_foreach_lerp.Scalar", "aten::_foreach_addcmul.Scalar",
                        "aten::_foreach_addcdiv.ScalarList", "aten::_foreach_sqrt"}}


def mlp() -> torch.nn.Module:
    return torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.GELU(),
                               torch.nn.Linear(128, 10))


def train(device: str, optimizer: str) -> Tuple[List[float], torch.nn.Module]:
    torch.manual_seed(0)
    model = mlp().to(device)
    opt = OPTIMIZERS[optimizer](model.parameters())
    data = torch.Generator().manual_seed(1)
    losses = []
    for _ in range(STEPS):
        x = torch.randn(32, 64, generator=data).to(device)
        y = torch.randint(0, 10, (32,), generator=data).to(device)
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)
        opt.step()
        losses.append(loss.item())
    return losses, model


@pytest.mark.parametrize("optimizer", sorted(OPTIMIZERS))
def test_training_steps_match_the_cpu(optimizer: str) -> None:
    expected_losses, expected = train("cpu", optimizer)
    ops_before, fallback_before = torch_neuronx.get_device_ops(), fallback_calls_by_reason()
    losses, model = train("neuron", optimizer)
    ran = {k for k, n in torch_neuronx.get_device_ops().items() if n > ops_before.get(k, 0)}
    fell_back = {op for (op, _), n in fallback_calls_by_reason().items()
                 if n > fallback_before.get((op, _), 0)}

    torch.testing.assert_close(losses, expected_losses, rtol=RTOL, atol=ATOL)
    for (name, got), want in zip(model.named_parameters(), expected.parameters()):
        assert got.device.type == "neuron" and got.grad.device.type == "neuron", name
        torch.testing.assert_close(got.detach().cpu(), want.detach(), rtol=RTOL, atol=ATOL,
                                   msg=lambda m: f"{name} after {STEPS} steps: {m}")
    # the forward's and backward's matmuls, GELU's backward, the loss's
    # log_softmax and nll_loss and their backward, the gradient norm and the
    # update ran as device kernels; nothing fell back
    missing = ({"aten::addmm", "aten::mm", "aten::gelu_backward", "aten::_log_softmax",
                "aten::_log_softmax_backward_data", "aten::nll_loss_forward",
                "aten::nll_loss_backward", "aten::linalg_vector_norm"}
               | UPDATE_OPS[optimizer]) - ran
    assert not missing, f"not run on the device: {sorted(missing)}"
    assert not fell_back, f"fell back: {sorted(fell_back)}"


def test_clip_grad_norm_matches_the_cpu() -> None:
    torch.manual_seed(0)
    cpu, x = mlp(), torch.randn(8, 64)
    device = mlp().to("neuron")
    device.load_state_dict(cpu.state_dict())
    cpu(x).sum().backward()
    device(x.to("neuron")).sum().backward()
    want = torch.nn.utils.clip_grad_norm_(cpu.parameters(), max_norm=1.0)
    got = torch.nn.utils.clip_grad_norm_(device.parameters(), max_norm=1.0)
    assert got.device.type == "neuron"
    torch.testing.assert_close(got.cpu(), want, rtol=RTOL, atol=ATOL)
    for a, b in zip(device.parameters(), cpu.parameters()):
        torch.testing.assert_close(a.grad.cpu(), b.grad, rtol=RTOL, atol=ATOL)
