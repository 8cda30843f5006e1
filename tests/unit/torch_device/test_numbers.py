# SPDX-License-Identifier: MIT
"""Numbers that change from call to call (a scheduler's learning rate, an
optimizer's bias corrections) compile once: from the second value of an
operator's numbers on, one program takes them as inputs. Its results are
the bits of the program compiled for each value, and training with a
scheduler compiles nothing after its second step."""

import logging
from typing import Callable, Dict

import pytest
import torch

from torch_neuronx.eager import kernels

Op = Callable[[torch.Tensor, torch.Tensor, torch.Tensor, float], torch.Tensor]

# The operators torch.optim's updates pass changing numbers to.
OPS: Dict[str, Op] = {
    "mul": lambda a, b, c, v: a * v,
    "div": lambda a, b, c, v: a / v,
    "add alpha": lambda a, b, c, v: torch.add(a, b, alpha=v),
    "sub alpha": lambda a, b, c, v: torch.sub(a, b, alpha=v),
    "add number": lambda a, b, c, v: a + v,
    "rsub": lambda a, b, c, v: v - a,
    "addcmul": lambda a, b, c, v: torch.addcmul(a, b, c, value=v),
    "addcdiv": lambda a, b, c, v: torch.addcdiv(a, b, c, value=v),
    "lerp": lambda a, b, c, v: torch.lerp(a, b, v),
    "mul_": lambda a, b, c, v: a.clone().mul_(v),
    "clamp": lambda a, b, c, v: a.clamp(min=-v),
}
VALUES = [0.3, -1.7, 2.5e-4, 1e-8, -0.0, 3.0, float("inf")]


def operands(columns: int) -> list:
    g = torch.Generator().manual_seed(columns)
    return [torch.randn(16, columns, generator=g), torch.randn(16, columns, generator=g),
            torch.rand(16, columns, generator=g) + 0.5]


@pytest.mark.parametrize("name", sorted(OPS))
def test_a_number_as_input_gives_the_bits_of_the_number_compiled_in(name: str) -> None:
    f = OPS[name]
    for i, v in enumerate(VALUES):
        # a family of its own (by shape), where v is the first value: compiled in
        a, b, c = operands(40 + i)
        compiled_in = f(*(t.to("neuron") for t in (a, b, c)), v).cpu()
        # v after two other values of another family: the program taking it
        wide = [torch.cat([t, t], 1).to("neuron") for t in (a, b, c)]
        f(*wide, 1.2345)
        f(*wide, 0.999)
        before = kernels.compiles
        as_input = f(*wide, v).cpu()[:, :a.shape[1]]
        assert kernels.compiles == before, f"{name}({v}) compiled again"
        assert torch.equal(compiled_in.view(torch.int32), as_input.view(torch.int32)), \
            f"{name}({v}): {(compiled_in - as_input).abs().max()}"
        assert torch.allclose(as_input, f(a, b, c, v), rtol=1e-6, atol=1e-6, equal_nan=True), \
            f"{name}({v}) differs from the CPU's"


def test_a_number_the_lowering_reads_compiles_per_value_and_warns(caplog) -> None:
    # pow's lowering picks its method by the exponent: a program per value,
    # and a warning once there are many
    x = torch.rand(8, 24) + 0.5
    d = x.to("neuron")
    with caplog.at_level(logging.WARNING, logger="torch_neuronx"):
        for n in range(1, 10):
            e = 1.0 + n / 16
            torch.testing.assert_close((d ** e).cpu(), x ** e)
    warned = [r.getMessage() for r in caplog.records if "aten::pow" in r.getMessage()]
    assert len(warned) == 1 and "one per value of its numbers" in warned[0], warned


def test_bfloat16_keeps_its_numbers_compiled_in() -> None:
    # (a float32 input would round the number otherwise than the CPU, which
    # computes bfloat16 arithmetic in float32 with the number as it is)
    x = torch.randn(8, 24).bfloat16()
    d = x.to("neuron")
    for v in (0.3, 0.7, 1.1):
        assert torch.equal((d * v).cpu(), x * v)


@pytest.mark.parametrize("foreach", [False, True])
@pytest.mark.parametrize("optimizer", ["sgd", "adamw"])
def test_a_scheduler_changes_the_rate_without_compiling(optimizer: str, foreach: bool) -> None:
    def run(device: str) -> tuple:
        torch.manual_seed(0)
        model = torch.nn.Sequential(torch.nn.Linear(32, 48), torch.nn.Tanh(),
                                    torch.nn.Linear(48, 4)).to(device)
        opt = (torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, foreach=foreach)
               if optimizer == "sgd" else
               torch.optim.AdamW(model.parameters(), lr=1e-2, weight_decay=0.1, foreach=foreach))
        sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: 1.0 / (1 + s))
        data = torch.Generator().manual_seed(1)
        compiled = []
        for _ in range(6):
            before = kernels.compiles
            x, y = torch.randn(16, 32, generator=data), torch.randn(16, 4, generator=data)
            loss = torch.nn.functional.mse_loss(model(x.to(device)), y.to(device))
            opt.zero_grad()
            loss.backward()
            opt.step()
            sched.step()
            loss.item()
            compiled.append(kernels.compiles - before)
        return compiled, [p.detach().cpu() for p in model.parameters()]

    _, want = run("cpu")
    compiled, got = run("neuron")
    assert compiled[2:] == [0, 0, 0, 0], f"programs compiled per step: {compiled}"
    for g, w in zip(got, want):
        torch.testing.assert_close(g, w, rtol=1e-4, atol=1e-5)
