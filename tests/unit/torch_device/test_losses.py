# SPDX-License-Identifier: MIT
"""nll_loss (cross_entropy's end) with PyTorch's int64 class indices on
the device (python/torch_neuronx/losses.py): the loss and its gradient
against the CPU in float32 and bfloat16, every reduction, class weights,
ignore_index, and the CPU's error for a target out of range."""

from typing import Optional

import pytest
import torch
import torch.nn.functional as F

import torch_neuronx

TOLERANCE = {torch.float32: dict(rtol=1e-5, atol=1e-6),
             # one bfloat16 rounding of the sums, added in another order
             torch.bfloat16: dict(rtol=1e-2, atol=1e-2)}


def _check(x: torch.Tensor, t: torch.Tensor, w: Optional[torch.Tensor], reduction: str,
           **kwargs: int) -> None:
    x = x.detach().requires_grad_()
    xd = x.detach().to("neuron").requires_grad_()
    want = F.nll_loss(x, t, weight=w, reduction=reduction, **kwargs)
    before, ran = torch_neuronx.get_fallback_ops(), torch_neuronx.get_device_ops()
    got = F.nll_loss(xd, t.to("neuron"), weight=None if w is None else w.to("neuron"),
                     reduction=reduction, **kwargs)
    g = torch.randn(want.shape).to(x.dtype)
    want.backward(g)
    got.backward(g.to("neuron"))
    torch.testing.assert_close(got.cpu(), want.detach(), **TOLERANCE[x.dtype])
    torch.testing.assert_close(xd.grad.cpu(), x.grad, **TOLERANCE[x.dtype])
    assert torch_neuronx.get_fallback_ops() == before
    after = torch_neuronx.get_device_ops()
    for op in ("aten::nll_loss_forward", "aten::nll_loss_backward"):
        assert after.get(op, 0) == ran.get(op, 0) + 1, op


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=str)
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("weighted", [False, True], ids=["unweighted", "weighted"])
def test_nll_loss_matches_the_cpu(dtype: torch.dtype, reduction: str, weighted: bool) -> None:
    torch.manual_seed(0)
    x = torch.randn(24, 11).log_softmax(1).to(dtype)
    t = torch.randint(0, 11, (24,))
    t[[3, 17]] = -100  # ignored, as a masked LM's unpredicted positions
    w = (torch.rand(11) + 0.5).to(dtype) if weighted else None
    _check(x, t, w, reduction)


def test_a_given_ignore_index_and_a_log_probability_of_minus_infinity() -> None:
    """Another class's -inf does not reach the loss (no 0 * -inf), and an
    ignore_index that is a class is ignored."""
    x = torch.randn(6, 5).log_softmax(1)
    x[:, 4] = float("-inf")
    t = torch.tensor([0, 1, 2, 3, 2, 1])
    _check(x, t, None, "mean", ignore_index=2)


def test_every_target_ignored_gives_nan_as_on_the_cpu() -> None:
    x = torch.randn(4, 3).log_softmax(1)
    got = F.nll_loss(x.to("neuron"), torch.full((4,), -100).to("neuron"))
    assert torch.isnan(F.nll_loss(x, torch.full((4,), -100)))
    assert torch.isnan(got.cpu())


@pytest.mark.parametrize("bad", [5, -1, 1 << 32])
def test_a_target_out_of_range_is_an_index_error(bad: int) -> None:
    """As the CPU: a target outside [0, C) (other than ignore_index) is an
    IndexError, never a silent pick of another position (1 << 32 is 0 in
    int32)."""
    x = torch.randn(3, 5).log_softmax(1).to("neuron")
    t = torch.tensor([1, bad, 2])
    with pytest.raises(IndexError, match=f"Target {bad} is out of bounds"):
        F.nll_loss(torch.randn(3, 5).log_softmax(1), t)
    with pytest.raises(IndexError, match=f"Target {bad} is out of bounds"):
        F.nll_loss(x, t.to("neuron"))


def test_forms_the_device_does_not_take_run_on_the_cpu() -> None:
    """1-d log-probabilities (one sample) run on the CPU, counted."""
    x = torch.randn(5).log_softmax(0)
    before = torch_neuronx.get_fallback_ops().get("aten::nll_loss_forward", 0)
    got = F.nll_loss(x.to("neuron"), torch.tensor(3).to("neuron"))
    torch.testing.assert_close(got.cpu(), F.nll_loss(x, torch.tensor(3)))
    assert torch_neuronx.get_fallback_ops()["aten::nll_loss_forward"] == before + 1
