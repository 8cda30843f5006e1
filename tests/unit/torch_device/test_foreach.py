# SPDX-License-Identifier: MIT
"""The `_foreach` operators (torch.optim's default update form) run as a
program per group of tensors: the bits of their operator run on each
tensor, a job per group rather than per tensor, and optimizers built on
them train as on the CPU."""

from typing import Callable, List, Tuple

import pytest
import torch

import torch_neuronx

# Mixed shapes, more tensors than one job binds.
SHAPES = [(64, 48), (48,), (300, 20), (5, 3), (7,)] * 12
Lists = Tuple[List[torch.Tensor], List[torch.Tensor], List[torch.Tensor]]
Case = Tuple[str, Callable[..., object], Callable[..., torch.Tensor]]

N = len(SHAPES)
STEPS = [0.1 * (i + 1) for i in range(N)]
# (name, the foreach call on lists p, g, d, the operator on tensor i)
CASES: List[Case] = [
    ("_foreach_mul_.Scalar", lambda p, g, d: torch._foreach_mul_(p, 0.9),
     lambda i, p, g, d: p * 0.9),
    ("_foreach_add_.List", lambda p, g, d: torch._foreach_add_(p, g, alpha=-0.1),
     lambda i, p, g, d: torch.add(p, g, alpha=-0.1)),
    ("_foreach_add_.Scalar", lambda p, g, d: torch._foreach_add_(p, 1e-8),
     lambda i, p, g, d: p + 1e-8),
    ("_foreach_sub.List", lambda p, g, d: torch._foreach_sub(p, g),
     lambda i, p, g, d: p - g),
    ("_foreach_addcmul_.Scalar", lambda p, g, d: torch._foreach_addcmul_(p, g, g, value=0.001),
     lambda i, p, g, d: torch.addcmul(p, g, g, value=0.001)),
    ("_foreach_addcdiv_.ScalarList", lambda p, g, d: torch._foreach_addcdiv_(p, g, d, STEPS),
     lambda i, p, g, d: torch.addcdiv(p, g, d, value=STEPS[i])),
    ("_foreach_lerp_.Scalar", lambda p, g, d: torch._foreach_lerp_(p, g, 0.1),
     lambda i, p, g, d: torch.lerp(p, g, 0.1)),
    ("_foreach_div_.ScalarList", lambda p, g, d: torch._foreach_div_(p, STEPS),
     lambda i, p, g, d: p / STEPS[i]),
    ("_foreach_sqrt", lambda p, g, d: torch._foreach_sqrt(d), lambda i, p, g, d: d.sqrt()),
    ("_foreach_maximum.List", lambda p, g, d: torch._foreach_maximum(p, g),
     lambda i, p, g, d: torch.maximum(p, g)),
    ("_foreach_neg", lambda p, g, d: torch._foreach_neg(p), lambda i, p, g, d: -p),
]


def lists(dtype: torch.dtype = torch.float32) -> Lists:
    gen = torch.Generator().manual_seed(0)
    return ([torch.randn(s, generator=gen, dtype=dtype) for s in SHAPES],
            [torch.randn(s, generator=gen, dtype=dtype) for s in SHAPES],
            [(torch.rand(s, generator=gen) + 0.5).to(dtype) for s in SHAPES])


def on_device(ts: List[torch.Tensor]) -> List[torch.Tensor]:
    return [t.to("neuron") for t in ts]


def results(call: Callable[..., object], p: List[torch.Tensor], g: List[torch.Tensor],
            d: List[torch.Tensor]) -> List[torch.Tensor]:
    r = call(p, g, d)
    return [t.cpu() for t in (r if r is not None else p)]


@pytest.mark.parametrize("name,call,each", CASES, ids=[c[0] for c in CASES])
def test_a_program_per_group_gives_the_bits_of_the_operator_per_tensor(
        name: str, call: Callable[..., object], each: Callable[..., torch.Tensor]) -> None:
    p, g, d = lists()
    before = torch_neuronx.get_device_ops().get(f"aten::{name.replace('_.', '.')}", 0)
    got = results(call, *(on_device(x) for x in (p, g, d)))
    ran = torch_neuronx.get_device_ops().get(f"aten::{name.replace('_.', '.')}", 0) - before
    dp, dg, dd = (on_device(x) for x in (p, g, d))
    one_by_one = [each(i, dp[i], dg[i], dd[i]).cpu() for i in range(N)]
    want = results(call, [t.clone() for t in p], g, d)
    for i, (a, b, c) in enumerate(zip(got, one_by_one, want)):
        assert torch.equal(a.view(torch.int32), b.view(torch.int32)), f"{name}: tensor {i}"
        torch.testing.assert_close(a, c, rtol=1e-6, atol=1e-6, msg=f"{name}: tensor {i}")
    # a program per group of tensors, not one per tensor
    assert 1 < ran < N // 4, f"{name}: {ran} programs for {N} tensors"


def test_bfloat16_lists_run_tensor_by_tensor_on_the_device() -> None:
    p, g, _ = lists(torch.bfloat16)
    dp, dg = on_device(p), on_device(g)
    fallbacks = torch_neuronx.get_fallback_ops()
    torch._foreach_add_(dp, dg, alpha=0.5)
    for a, b, c in zip(dp, p, g):
        assert torch.equal(a.cpu(), torch.add(b, c, alpha=0.5))
    assert torch_neuronx.get_fallback_ops() == fallbacks


def test_lists_of_different_lengths_are_refused() -> None:
    # as on the CPU
    p, g, _ = lists()
    with pytest.raises(RuntimeError, match="same number of tensors, got 60 and 59"):
        torch._foreach_add_(on_device(p), on_device(g[:-1]))


@pytest.mark.parametrize("optimizer", ["sgd", "adam", "adamw"])
def test_foreach_optimizers_update_as_on_the_cpu_in_few_jobs(optimizer: str) -> None:
    def run(device: str) -> List[torch.Tensor]:
        p, g, _ = lists()
        params = [torch.nn.Parameter(t.to(device)) for t in p]
        make = {"sgd": lambda: torch.optim.SGD(params, lr=0.1, momentum=0.9, foreach=True),
                "adam": lambda: torch.optim.Adam(params, lr=1e-2, foreach=True),
                "adamw": lambda: torch.optim.AdamW(params, lr=1e-2, weight_decay=0.1,
                                                   foreach=True)}[optimizer]
        opt = make()
        for step in range(3):
            for q, grad in zip(params, g):
                q.grad = (grad * (step + 1)).to(device)
            opt.step()
        return [q.detach().cpu() for q in params]

    want = run("cpu")
    before = sum(torch_neuronx.get_device_ops().values())
    got = run("neuron")
    jobs = sum(torch_neuronx.get_device_ops().values()) - before
    for i, (a, b) in enumerate(zip(got, want)):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-6, msg=f"parameter {i}")
    # per step a few programs per update operator, each covering a group of
    # parameters (one per parameter and operator would be several times N)
    per_step = jobs / 3
    assert per_step < N, f"{per_step} device operators per step for {N} parameters"
