# SPDX-License-Identifier: MIT
"""The attention models of the tests and their error bounds (tolerance.py)
through every step the compiler emits for them."""

import math
from typing import Any, Tuple

import torch

import tolerance as tol


def heads(x: tol.Bounded, n: int) -> tol.Bounded:
    """[B, T, D] -> [B, n, T, D / n] (data movement: exact)."""
    def split(t: torch.Tensor) -> torch.Tensor:
        B, T, D = t.shape
        return t.reshape(B, T, n, D // n).transpose(1, 2)
    return split(x[0]), split(x[1])


def merge(x: tol.Bounded) -> tol.Bounded:
    """[B, n, T, d] -> [B, T, n d]."""
    def join(t: torch.Tensor) -> torch.Tensor:
        B, n, T, d = t.shape
        return t.transpose(1, 2).reshape(B, T, n * d)
    return join(x[0]), join(x[1])


def transposed(x: tol.Bounded) -> tol.Bounded:
    return x[0].transpose(-2, -1), x[1].transpose(-2, -1)


def attention(q: tol.Bounded, k: tol.Bounded, v: tol.Bounded, n_heads: int, causal: bool,
              scale_first: bool) -> tol.Bounded:
    """softmax(q k^T / sqrt(d)) v per head; the scale on q before the
    matmul (nn.MultiheadAttention, scaled dot-product attention) or on the
    scores after it (GPT-2), one exact TENSOR_SCALAR either way."""
    q, k, v = heads(q, n_heads), heads(k, n_heads), heads(v, n_heads)
    factor = 1.0 / math.sqrt(q[0].shape[-1])
    if scale_first:
        scores = tol.matmul(tol.scale(q, factor), transposed(k))
    else:
        scores = tol.scale(tol.matmul(q, transposed(k)), factor)
    return merge(tol.matmul(tol.softmax(scores, causal), v))


def columns(x: tol.Bounded, start: int, end: int) -> tol.Bounded:
    return x[0][..., start:end], x[1][..., start:end]


class GPT2Block(torch.nn.Module):
    """A GPT-2-style decoder block: pre-LayerNorm, masked self-attention
    (the causal mask a registered lower-triangular buffer, as GPT-2 and
    nanoGPT hold it), MLP with GELU, residuals."""

    def __init__(self, d: int = 768, n_heads: int = 12, block: int = 256,
                 stages: bool = False) -> None:
        super().__init__()
        self.n_heads = n_heads
        self.stages = stages  # also return the attention's and the first residual's values
        self.ln_1 = torch.nn.LayerNorm(d)
        self.c_attn = torch.nn.Linear(d, 3 * d)
        self.c_proj = torch.nn.Linear(d, d)
        self.ln_2 = torch.nn.LayerNorm(d)
        self.c_fc = torch.nn.Linear(d, 4 * d)
        self.mlp_proj = torch.nn.Linear(4 * d, d)
        self.register_buffer("bias", torch.tril(torch.ones(block, block)).view(1, 1, block, block))

    def forward(self, x: torch.Tensor) -> Any:
        B, T, C = x.shape
        q, k, v = self.c_attn(self.ln_1(x)).split(C, dim=2)
        q = q.view(B, T, self.n_heads, C // self.n_heads).transpose(1, 2)
        k = k.view(B, T, self.n_heads, C // self.n_heads).transpose(1, 2)
        v = v.view(B, T, self.n_heads, C // self.n_heads).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        att = att.masked_fill(self.bias[:, :, :T, :T] == 0, float("-inf"))
        att = torch.softmax(att, dim=-1)
        y = (att @ v).transpose(1, 2).contiguous().view(B, T, C)
        x1 = x + self.c_proj(y)
        out = x1 + self.mlp_proj(torch.nn.functional.gelu(self.c_fc(self.ln_2(x1))))
        return (y, x1, out) if self.stages else out


def gpt2_attention(model: GPT2Block, x: tol.Bounded) -> tol.Bounded:
    """The block's masked self-attention of ln_1(x), before c_proj."""
    d = x[0].shape[-1]
    h = tol.layer_norm(x, model.ln_1.weight, model.ln_1.bias, model.ln_1.eps)
    qkv = tol.linear_of(h, model.c_attn.weight, model.c_attn.bias)
    return attention(columns(qkv, 0, d), columns(qkv, d, 2 * d), columns(qkv, 2 * d, 3 * d),
                     model.n_heads, causal=True, scale_first=False)


def gpt2_mlp(model: GPT2Block, x1: tol.Bounded) -> tol.Bounded:
    """x1 + the MLP of ln_2(x1)."""
    h = tol.layer_norm(x1, model.ln_2.weight, model.ln_2.bias, model.ln_2.eps)
    h = tol.activation(tol.linear(h, model.c_fc), "gelu")
    return tol.add(x1, tol.linear(h, model.mlp_proj))


def check_gpt2_stages(model: GPT2Block, x: torch.Tensor,
                      stages: Tuple[torch.Tensor, ...]) -> None:
    """The attention from the input, the residual after c_proj from the
    device's attention, the block's result from the device's residual,
    each within its bound (through the whole block from the input alone
    the bound would not see the mask: see docs/torch.md, Error bounds)."""
    y, x1, out = stages
    tol.check(y, gpt2_attention(model, tol.exact(x)))
    tol.check(x1, tol.add(tol.exact(x), tol.linear_of(tol.exact(y), model.c_proj.weight,
                                                       model.c_proj.bias)))
    tol.check(out, gpt2_mlp(model, tol.exact(x1)))


def encoder_attention_block(layer: torch.nn.TransformerEncoderLayer, x: tol.Bounded,
                            causal: bool = False) -> tol.Bounded:
    """x + self_attn(x) of nn.TransformerEncoderLayer as torch 1.13 traces
    it with grad: in_proj linear, chunk, heads, q / sqrt(d), bmm, softmax,
    bmm, out_proj, residual."""
    attn = layer.self_attn
    d = x[0].shape[-1]
    qkv = tol.linear_of(x, attn.in_proj_weight, attn.in_proj_bias)
    y = attention(columns(qkv, 0, d), columns(qkv, d, 2 * d), columns(qkv, 2 * d, 3 * d),
                  attn.num_heads, causal=causal, scale_first=True)
    return tol.add(x, tol.linear_of(y, attn.out_proj.weight, attn.out_proj.bias))


def encoder_feed_forward_block(layer: torch.nn.TransformerEncoderLayer,
                               x: tol.Bounded) -> tol.Bounded:
    """x + linear2(relu(linear1(x)))."""
    return tol.add(x, tol.linear(tol.activation(tol.linear(x, layer.linear1), "relu"),
                                 layer.linear2))


def encoder_layer(layer: torch.nn.TransformerEncoderLayer, x: torch.Tensor,
                  causal: bool = False) -> tol.Bounded:
    """nn.TransformerEncoderLayer (batch_first, post-norm, ReLU, eval):
    the bound of the whole layer from its input."""
    s1 = encoder_attention_block(layer, tol.exact(x), causal)
    x1 = tol.layer_norm(s1, layer.norm1.weight, layer.norm1.bias, layer.norm1.eps)
    s2 = encoder_feed_forward_block(layer, x1)
    return tol.layer_norm(s2, layer.norm2.weight, layer.norm2.bias, layer.norm2.eps)


class EncoderStages(torch.nn.Module):
    """nn.TransformerEncoderLayer's forward (post-norm, eval) made of the
    layer's own modules, returning the value before and after each of its
    two LayerNorms: the same operators, with the sub-layers' results also
    read back. @p causal: with nn.Transformer's square subsequent mask."""

    def __init__(self, layer: torch.nn.TransformerEncoderLayer, causal: bool = False) -> None:
        super().__init__()
        self.layer = layer
        self.causal = causal

    def forward(self, x: torch.Tensor) -> Tuple[torch.Tensor, ...]:
        layer = self.layer
        mask = (torch.nn.Transformer.generate_square_subsequent_mask(x.size(1))
                if self.causal else None)
        s1 = x + layer._sa_block(x, mask, None)
        x1 = layer.norm1(s1)
        s2 = x1 + layer._ff_block(x1)
        return s1, x1, s2, layer.norm2(s2)


def check_encoder_stages(layer: torch.nn.TransformerEncoderLayer, x: torch.Tensor,
                         stages: Tuple[torch.Tensor, ...], causal: bool = False) -> None:
    """The attention block from the input, each LayerNorm and the
    feed-forward block from the device's own result before it, each
    within its bound."""
    s1, x1, s2, y = stages
    tol.check(s1, encoder_attention_block(layer, tol.exact(x), causal))
    tol.check(x1, tol.layer_norm(tol.exact(s1), layer.norm1.weight, layer.norm1.bias,
                                 layer.norm1.eps))
    tol.check(s2, encoder_feed_forward_block(layer, tol.exact(x1)))
    tol.check(y, tol.layer_norm(tol.exact(s2), layer.norm2.weight, layer.norm2.bias,
                                layer.norm2.eps))
