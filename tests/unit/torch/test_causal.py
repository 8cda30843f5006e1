# SPDX-License-Identifier: MIT
"""Causal attention on the simulator device (NEURON_DEVICE=sim): the masks
torch 1.13 traces (a registered lower-triangular buffer with masked_fill,
torch.triu in forward, nn.Transformer's additive square subsequent mask
through baddbmm, torch.where with torch.finfo's min, scaled dot-product
attention with is_causal or a bool mask) lower to the compiler's
softmax(causal=true), which builds the mask on the device; results against
torch on the CPU in double precision within hw/isa.md's bounds
(tolerance.py, attention.py)."""

import copy
import math
from pathlib import Path
from typing import Callable

import pytest
import torch

import torch_neuronx
import tolerance as tol
from attention import (EncoderStages, GPT2Block, attention, check_encoder_stages,
                       check_gpt2_stages)

SEQUENCE_LENGTHS = [1, 77, 128, 200]


def causal_program(model: Callable[..., torch.Tensor], inputs: tuple, workdir: Path
                   ) -> torch.jit.ScriptModule:
    """@p model traced without a partitioner (so nothing runs on the CPU),
    checked to compile one causal softmax per attention and no mask."""
    traced = torch_neuronx.trace(model, inputs, compiler_workdir=workdir)
    nir = (workdir / "model.nir").read_text()
    assert "causal=true" in nir, nir[:2000]
    return traced


def double_of(model: torch.nn.Module) -> torch.nn.Module:
    return copy.deepcopy(model).double()


@pytest.mark.parametrize("T", SEQUENCE_LENGTHS)
def test_gpt2_block(T: int, tmp_path: Path) -> None:
    torch.manual_seed(T)
    model = GPT2Block().eval()
    x = torch.randn(1, T, 768)
    whole = causal_program(model, (x,), tmp_path / "whole")
    staged = GPT2Block(stages=True).eval()
    staged.load_state_dict(model.state_dict())
    stages = causal_program(staged, (x,), tmp_path)
    for _ in range(2):
        x = torch.randn(1, T, 768)
        out = stages(x)
        assert torch.equal(out[2], whole(x)), "the stages' program computes another block"
        with torch.no_grad():
            for got, want in zip(out, double_of(staged)(x.double())):
                assert torch.allclose(got.double(), want, atol=1e-4)
        check_gpt2_stages(model, x, out)


def test_gpt2_block_batch(tmp_path: Path) -> None:
    torch.manual_seed(4)
    model = GPT2Block(d=256, n_heads=4, stages=True).eval()
    x = torch.randn(4, 77, 256)
    check_gpt2_stages(model, x, causal_program(model, (x,), tmp_path)(x))


class TriuAttention(torch.nn.Module):
    """The mask made in forward from the sequence length."""

    def forward(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        T = q.size(-2)
        mask = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)
        att = (q @ k.transpose(-2, -1)) / math.sqrt(q.size(-1))
        return torch.softmax(att.masked_fill(mask, float("-inf")), dim=-1) @ v


class WhereAttention(torch.nn.Module):
    """HF GPT-2's form: torch.where(mask, scores, the dtype's lowest)."""

    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("bias", torch.tril(torch.ones(256, 256, dtype=torch.bool)))

    def forward(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        T = q.size(-2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(q.size(-1)))
        lowest = torch.tensor(torch.finfo(att.dtype).min, dtype=att.dtype)
        att = torch.where(self.bias[:T, :T], att, lowest)
        return torch.softmax(att, dim=-1) @ v


def sdpa_is_causal(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    return torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)


def sdpa_bool_mask(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    T = q.size(-2)
    keep = torch.ones(T, T, dtype=torch.bool).tril()
    return torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=keep)


def head_bound(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, scale_first: bool) -> tol.Bounded:
    """attention() of one head per [B, H] pair: q, k, v of [B, H, T, d]."""
    B, H, T, d = q.shape
    flat = [t.transpose(1, 2).reshape(B, T, H * d) for t in (q, k, v)]
    y = attention(*(tol.exact(t) for t in flat), H, causal=True, scale_first=scale_first)
    return tuple(t.reshape(B, T, H, d).transpose(1, 2) for t in y)  # type: ignore[return-value]


@pytest.mark.parametrize("T", SEQUENCE_LENGTHS)
@pytest.mark.parametrize("form", ["triu", "where", "sdpa_is_causal", "sdpa_bool_mask"])
def test_attention_forms(form: str, T: int, tmp_path: Path) -> None:
    model: Callable[..., torch.Tensor] = {
        "triu": TriuAttention().eval(), "where": WhereAttention().eval(),
        "sdpa_is_causal": sdpa_is_causal, "sdpa_bool_mask": sdpa_bool_mask}[form]
    torch.manual_seed(T)
    q, k, v = (torch.randn(2, 3, T, 64) for _ in range(3))
    traced = causal_program(model, (q, k, v), tmp_path)
    q, k, v = (torch.randn(2, 3, T, 64) for _ in range(3))
    expected = head_bound(q, k, v, scale_first=False)
    assert torch.allclose(expected[0], model(q.double(), k.double(), v.double()), atol=1e-12)
    tol.check(traced(q, k, v), expected)


class MaskedEncoder(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.layer = torch.nn.TransformerEncoderLayer(768, 12, 3072, batch_first=True)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        mask = torch.nn.Transformer.generate_square_subsequent_mask(x.size(1))
        return self.layer(x, src_mask=mask)


def test_encoder_layer_with_square_subsequent_mask(tmp_path: Path) -> None:
    T = 77
    torch.manual_seed(3)
    model = MaskedEncoder().eval()
    x = torch.randn(1, T, 768)
    whole = causal_program(model, (x,), tmp_path / "whole")
    stages = causal_program(EncoderStages(model.layer, causal=True).eval(), (x,), tmp_path)
    x = torch.randn(1, T, 768)
    out = stages(x)
    assert torch.equal(out[3], whole(x)), "the stages' program computes another layer"
    with torch.no_grad():
        assert torch.allclose(out[3], model(x), atol=1e-4)
    check_encoder_stages(model.layer, x, out, causal=True)


def test_other_masks_are_refused() -> None:
    class Shifted(torch.nn.Module):
        def forward(self, s: torch.Tensor) -> torch.Tensor:
            mask = torch.triu(torch.ones(8, 8, dtype=torch.bool), diagonal=2)
            return torch.softmax(s.masked_fill(mask, float("-inf")), -1)

    class FromInput(torch.nn.Module):
        def forward(self, s: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
            return torch.softmax(s.masked_fill(mask, float("-inf")), -1)

    class SmallFill(torch.nn.Module):
        def forward(self, s: torch.Tensor) -> torch.Tensor:
            mask = torch.triu(torch.ones(8, 8, dtype=torch.bool), diagonal=1)
            return torch.softmax(s.masked_fill(mask, -10.0), -1)

    class MaskedNotSoftmax(torch.nn.Module):
        def forward(self, s: torch.Tensor) -> torch.Tensor:
            mask = torch.triu(torch.ones(8, 8, dtype=torch.bool), diagonal=1)
            return torch.relu(s.masked_fill(mask, float("-inf")))

    s = torch.randn(2, 8, 8)
    with pytest.raises(torch_neuronx.UnsupportedOperatorError,
                       match=r"aten::masked_fill .*: a mask other than the causal one"):
        torch_neuronx.trace(Shifted().eval(), s)
    report = torch_neuronx.analyze(FromInput().eval(), (s, torch.zeros(8, 8, dtype=torch.bool)))
    assert [(u["kind"], u["reason"].split(" (")[0]) for u in report["unsupported_operators"]] == \
        [("aten::masked_fill", "a mask computed from the inputs")]
    with pytest.raises(torch_neuronx.UnsupportedOperatorError,
                       match=r"aten::masked_fill .*: a fill of -10.0"):
        torch_neuronx.trace(SmallFill().eval(), s)
    with pytest.raises(torch_neuronx.UnsupportedOperatorError,
                       match=r"aten::relu .*causally masked and not the operand of a softmax"):
        torch_neuronx.trace(MaskedNotSoftmax().eval(), s)


def test_partitioned_other_mask_runs_on_the_cpu() -> None:
    # A mask the device does not apply: masked_fill runs on the CPU, the
    # softmax on the device (not causal: the mask is an input of it).
    class Shifted(torch.nn.Module):
        def forward(self, s: torch.Tensor) -> torch.Tensor:
            mask = torch.triu(torch.ones(8, 8, dtype=torch.bool), diagonal=2)
            return torch.softmax(s.masked_fill(mask, float("-inf")), -1)

    s = torch.randn(2, 8, 8)
    with pytest.warns(torch_neuronx.PartitionWarning, match="aten::masked_fill"):
        traced = torch_neuronx.trace(Shifted().eval(), s,
                                     partitioner_config=torch_neuronx.PartitionerConfig(
                                         model_support_percentage_threshold=0.0))
    s = torch.randn(2, 8, 8)
    masked = s.masked_fill(torch.triu(torch.ones(8, 8, dtype=torch.bool), diagonal=2),
                           float("-inf"))
    tol.check(traced(s), tol.softmax(tol.exact(masked)))
