# SPDX-License-Identifier: MIT
"""torch.autocast("neuron", dtype=torch.bfloat16): PyTorch's cast policy
on the device (matmuls in bfloat16, softmax and losses in float32, as on
CUDA), and a transformers model trained under it, against the same run on
the CPU under the CPU's bfloat16 autocast."""

from typing import List

import torch
import torch.nn.functional as F
import transformers

import torch_neuronx  # noqa: F401  (the backend; torch also autoloads it)

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
    torch.manual_seed(0)
    model = transformers.GPT2LMHeadModel(transformers.GPT2Config(
        vocab_size=256, n_layer=2, n_embd=64, n_head=4, n_positions=64, resid_pdrop=0.0,
        embd_pdrop=0.0, attn_pdrop=0.0, bos_token_id=0, eos_token_id=0)).to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    data = torch.Generator().manual_seed(1)
    batches = [torch.randint(0, 256, (4, 32), generator=data) for _ in range(4)]
    losses = []
    for step in range(STEPS):
        ids = batches[step % len(batches)].to(device)
        with torch.autocast(device, dtype=torch.bfloat16):
            out = model(ids, labels=ids)
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
