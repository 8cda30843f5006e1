# SPDX-License-Identifier: MIT
"""Standard models moved to "neuron" run eagerly (inference) and match the CPU."""

import pytest
import torch
import torch.nn.functional as F


class Block(torch.nn.Module):
    """A GPT-2-style block: pre-norm causal self-attention and MLP."""

    def __init__(self, d: int = 64, heads: int = 4) -> None:
        super().__init__()
        self.ln1, self.ln2 = torch.nn.LayerNorm(d), torch.nn.LayerNorm(d)
        self.qkv, self.proj = torch.nn.Linear(d, 3 * d), torch.nn.Linear(d, d)
        self.fc, self.out = torch.nn.Linear(d, 4 * d), torch.nn.Linear(4 * d, d)
        self.heads = heads

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, d = x.shape
        q, k, v = (z.view(b, t, self.heads, d // self.heads).transpose(1, 2)
                   for z in self.qkv(self.ln1(x)).split(d, dim=2))
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(a.transpose(1, 2).contiguous().view(b, t, d))
        return x + self.out(F.gelu(self.fc(self.ln2(x)), approximate="tanh"))


def mlp() -> torch.nn.Module:
    return torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.GELU(), torch.nn.Linear(128, 32))


def encoder_layer() -> torch.nn.Module:
    return torch.nn.TransformerEncoderLayer(64, 4, 128, dropout=0.0, batch_first=True)


@pytest.mark.parametrize("make,shape", [(mlp, (8, 64)), (Block, (2, 16, 64)),
                                        (encoder_layer, (2, 10, 64))])
@pytest.mark.parametrize("grad", [False, True])
def test_model_matches_the_cpu(make, shape, grad):
    torch.manual_seed(0)
    model = make().eval()
    x = torch.randn(*shape)
    with torch.set_grad_enabled(grad):
        ref = model(x)
        got = model.to("neuron")(x.to("neuron"))
    assert got.device.type == "neuron"
    # fp32 on the device: matmuls accumulate in another order than torch's
    torch.testing.assert_close(got.cpu(), ref.detach(), rtol=1e-5, atol=1e-5)
