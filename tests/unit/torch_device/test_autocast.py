# SPDX-License-Identifier: MIT
"""torch.autocast("neuron", dtype=torch.bfloat16): PyTorch's cast policy
on the device (matmuls in bfloat16, softmax and losses in float32, as on
CUDA), and a transformers model trained under it, against the same run on
the CPU under the CPU's bfloat16 autocast."""

from typing import List

import torch
import torch.nn.functional as F
import torch_neuronx
from torch_neuronx.eager.fallback import fallback_calls_by_reason
from test_transformers import BATCHES, MODELS

STEPS = 20
# bfloat16 keeps 8 bits of mantissa: one rounding is up to 2**-8 relative,
# and the two devices round the products of differently ordered sums.
RTOL, ATOL = 1e-2, 1e-3


def test_the_policy_is_pytorchs() -> None:
    assert torch.amp.is_autocast_available("neuron")
    assert torch.neuron.get_amp_supported_dtype() == [torch.bfloat16]
    a = torch.randn(8, 16, device="neuron")
    w = torch.randn(4, 16, device="neuron")
    with torch.autocast("neuron", dtype=torch.bfloat16):
        y = F.linear(a, w)                   # lower precision
        p = torch.softmax(y, dim=-1)         # float32
        s = y + a[:, :4]                     # outside the lists: as the operands say
    assert y.dtype == torch.bfloat16 and p.dtype == torch.float32 and s.dtype == torch.float32
    with torch.autocast("cpu", dtype=torch.bfloat16):
        want = F.linear(a.cpu(), w.cpu())
    torch.testing.assert_close(y.cpu(), want, rtol=RTOL, atol=ATOL)
    # Outside the context, nothing is cast.
    assert F.linear(a, w).dtype == torch.float32


def test_mixed_bfloat16_and_float32_operands_run_on_the_device() -> None:
    """An operator of a bfloat16 and a float32 tensor (autocast's matmul
    results meeting float32 residuals) computes as PyTorch promotes: the
    bfloat16 operand converted to float32, the operator in float32."""
    torch.manual_seed(0)
    fell_back = torch_neuronx.get_fallback_ops()
    for op in (torch.add, torch.sub, torch.mul, torch.div):
        for low, high in (((4, 8), (8,)), ((8,), (4, 8)), ((4, 8), (4, 8))):
            a = torch.randn(low).to(torch.bfloat16)
            b = torch.randn(high) + 2.0  # (away from 0, for div)
            for x, y in ((a, b), (b, a)):
                got = op(x.to("neuron"), y.to("neuron"))
                want = op(x, y)
                assert got.dtype == want.dtype == torch.float32
                torch.testing.assert_close(got.cpu(), want, rtol=1e-6, atol=1e-6)
    assert torch_neuronx.get_fallback_ops() == fell_back


def train(device: str) -> List[float]:
    """test_transformers.py's GPT-2 and batches, under autocast."""
    torch.manual_seed(0)
    model = MODELS["gpt2"]().to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    losses = []
    for step in range(STEPS):
        ids, labels = BATCHES["gpt2"][step % len(BATCHES["gpt2"])]
        with torch.autocast(device, dtype=torch.bfloat16):
            out = model(ids.to(device), labels=labels.to(device))
        assert out.logits.dtype == torch.bfloat16
        out.loss.backward()
        opt.step()
        opt.zero_grad()
        losses.append(out.loss.item())
    return losses


def test_gpt2_trains_under_autocast_as_on_the_cpu() -> None:
    expected = train("cpu")
    before = fallback_calls_by_reason()
    losses = train("neuron")
    fell_back = {(op, why) for (op, why), n in fallback_calls_by_reason().items()
                 if n > before.get((op, why), 0)}
    # The attention and MLP's mixed bfloat16 and float32 mul and add run on
    # the device (an add of int64 positions may still fall back).
    assert not {op for op, why in fell_back if "int64" not in why} & {
        "aten::mul.Tensor", "aten::add.Tensor"}, sorted(fell_back)
    torch.testing.assert_close(losses, expected, rtol=RTOL, atol=ATOL)
    assert losses[-1] < 0.9 * losses[0], f"the loss did not fall: {losses[0]} -> {losses[-1]}"
