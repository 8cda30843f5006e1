# SPDX-License-Identifier: MIT
"""torch.autocast("neuron", dtype=torch.bfloat16): PyTorch's cast policy
on the device (matmuls in bfloat16, softmax and losses in float32, as on
CUDA), and a transformers model trained under it, against the same run on
the CPU under the CPU's bfloat16 autocast."""

from typing import List

import torch
import torch.nn.functional as F
import torch_neuronx  # noqa: F401  (the backend; torch also autoloads it)
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
    losses = train("neuron")
    torch.testing.assert_close(losses, expected, rtol=RTOL, atol=ATOL)
    assert losses[-1] < 0.9 * losses[0], f"the loss did not fall: {losses[0]} -> {losses[-1]}"
