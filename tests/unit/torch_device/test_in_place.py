# SPDX-License-Identifier: MIT
"""In-place and `out=` calls: a program writes into its input's memory
where it reads none of it after writing it (libneuron's in_place_slots),
else into new memory that is copied in; either way the bits are those of
the functional call. Repeated calls, with other numbers too, run from
C++ without the Python dispatcher."""

from typing import Callable, List

import pytest
import torch

from torch_neuronx.eager import dispatch, kernels
from torch_neuronx.eager.signature import call_of

# Several tiles of rows; rows wider than one tile's columns; a vector.
SHAPES = [(700, 96), (5, 3000), (1000,)]


def randn(shape, seed: int = 0, positive: bool = False) -> torch.Tensor:
    t = torch.randn(shape, generator=torch.Generator().manual_seed(seed))
    return t.abs() + 0.5 if positive else t


# (name, in-place call, the same computation as a functional call), on x, y
IN_PLACE: List = [
    ("mul_", lambda x, y, v: x.mul_(v), lambda x, y, v: x.mul(v)),
    ("add_self", lambda x, y, v: x.add_(x, alpha=v), lambda x, y, v: x.add(x, alpha=v)),
    ("addcmul_", lambda x, y, v: x.addcmul_(y, y, value=v),
     lambda x, y, v: x.addcmul(y, y, value=v)),
    ("addcdiv_", lambda x, y, v: x.addcdiv_(y, y.abs() + 1, value=v),
     lambda x, y, v: x.addcdiv(y, y.abs() + 1, value=v)),
    ("lerp_", lambda x, y, v: x.lerp_(y, v), lambda x, y, v: x.lerp(y, v)),
    ("div_", lambda x, y, v: x.div_(v), lambda x, y, v: x / v),
    ("sqrt_", lambda x, y, v: x.abs_().sqrt_(), lambda x, y, v: x.abs().sqrt()),
    ("hardtanh_", lambda x, y, v: torch.nn.functional.hardtanh_(x, -v, v / 2),
     lambda x, y, v: torch.nn.functional.hardtanh(x, -v, v / 2)),
]


@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("name,in_place,functional", IN_PLACE, ids=[c[0] for c in IN_PLACE])
def test_in_place_gives_the_bits_of_the_functional_call(
        name: str, in_place: Callable, functional: Callable, shape) -> None:
    x, y = randn(shape, 1).to("neuron"), randn(shape, 2).to("neuron")
    want = x.clone()
    # New numbers at every call: a program with them in, then one taking them.
    for v in (0.5, 0.75, 1.25, 2.0):
        want = functional(want, y, v)
        storage = x.untyped_storage().data_ptr()
        assert in_place(x, y, v) is x
        assert x.untyped_storage().data_ptr() == storage
        assert torch.equal(x.cpu().view(torch.int32), want.cpu().view(torch.int32)), f"{name} {v}"


OUT_ALIASING = [
    ("mm x@w", lambda x, w: torch.mm(x, w, out=x), lambda x, w: x @ w),
    ("mm w@x", lambda x, w: torch.mm(w, x, out=x), lambda x, w: w @ x),
    ("mm x@x", lambda x, w: torch.mm(x, x, out=x), lambda x, w: x @ x),
    ("add into w", lambda x, w: torch.add(x, w, alpha=0.5, out=w), lambda x, w: x + 0.5 * w),
    ("tanh", lambda x, w: torch.tanh(x, out=x), lambda x, w: x.tanh()),
    ("softmax", lambda x, w: torch._softmax(x, -1, False, out=x),
     lambda x, w: torch.softmax(x, -1)),
]


@pytest.mark.parametrize("name,out,functional", OUT_ALIASING, ids=[c[0] for c in OUT_ALIASING])
def test_out_an_input_gives_the_bits_of_the_functional_call(
        name: str, out: Callable, functional: Callable) -> None:
    for _ in range(2):  # (the second from C++'s kept kernel)
        x, w = randn((384, 384), 3).to("neuron"), randn((384, 384), 4).to("neuron")
        want = functional(x, w).cpu()
        got = out(x, w).cpu()
        assert torch.equal(got.view(torch.int32), want.view(torch.int32)), name


def test_a_program_reading_its_input_after_writing_is_not_run_in_place() -> None:
    # x @ x at this size reads x's rows again for each block of results
    # after writing the first: in place, it would read its own results.
    x = (randn((2048, 2048), 10) / 32).to("neuron")
    want = (x @ x).cpu()
    torch.mm(x, x, out=x)
    assert torch.equal(x.cpu(), want)


def test_out_overlapping_an_input_shifted_is_computed_apart() -> None:
    base = randn((257, 64), 5).to("neuron")
    want = (base[:-1] * 3.0).cpu()
    torch.mul(base[:-1], 3.0, out=base[1:])
    assert torch.equal(base[1:].cpu(), want)


def test_an_elementwise_program_writes_into_its_input_and_nothing_else() -> None:
    x, y = randn((700, 96), 6).to("neuron"), randn((700, 96), 7).to("neuron")
    call = call_of(torch.ops.aten.add.Tensor, (x, y), {})
    entry = kernels.kernel_for(call)
    assert isinstance(entry, kernels.Kernel)
    want = (x + y).cpu()
    assert entry.run_into(call, [x])
    assert torch.equal(x.cpu(), want)
    # Part of an input's memory, or another output's, is refused.
    big = torch.zeros(701 * 96, device="neuron")
    x = big[96:].view(700, 96)
    call = call_of(torch.ops.aten.add.Tensor, (big[:700 * 96].view(700, 96), y), {})
    assert not entry.kernel.run_into(entry.inputs(call), [x])
    assert not entry.run_into(call, [torch.zeros(700, 95, device="neuron")])


def test_repeated_calls_with_new_numbers_skip_the_python_dispatcher(monkeypatch) -> None:
    x, y = randn((300, 40), 8).to("neuron"), randn((300, 40), 9).to("neuron")
    want = x.cpu()
    values = [0.1 * i for i in range(1, 9)]

    def step(x: torch.Tensor, y: torch.Tensor, v: float) -> None:
        x.mul_(1 - v).addcdiv_(y, y.abs() + 1, value=-v)
        x.add_(x / (1 + v))

    for v in values[:3]:  # the first value, the second, which compiles for all
        step(x, y, v)
    entered: List[str] = []
    boxed = dispatch.dispatch_boxed

    def counting(name, overload, *args, **kwargs):
        entered.append(f"{name}.{overload}")
        return boxed(name, overload, *args, **kwargs)

    monkeypatch.setattr(dispatch, "dispatch_boxed", counting)
    for v in values[3:]:
        step(x, y, v)
    monkeypatch.undo()
    for v in values:
        step(want, y.cpu(), v)
    torch.testing.assert_close(x.cpu(), want, rtol=1e-5, atol=1e-6)
    assert entered == [], entered
