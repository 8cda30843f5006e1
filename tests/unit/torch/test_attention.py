# SPDX-License-Identifier: MIT
"""Attention with an additive mask on the simulator device
(NEURON_DEVICE=sim): torch's scaled_dot_product_attention lowers to
one attention node of the IR (the decomposed form only when its attention
weights are used, scaled alike), and a 2-D mask shared by several heads,
through it or through nn.MultiheadAttention's baddbmm, and a [B, 1, 1, K]
key padding mask run on the device, also nn.MultiheadAttention's
key_padding_mask (float or bool), expanded over the heads; results against torch on the CPU in
double precision within hw/isa.md's bounds (tolerance.py). A mask the
device does not add is refused before compiling, naming its shape and
the scores'."""

import copy
import math
import re
from pathlib import Path
from typing import Optional, Tuple

import pytest
import torch

import torch_neuronx
import tolerance as tol
from attention import columns, heads, merge, transposed

SEQUENCE_LENGTHS = [1, 77, 128, 200]


def sdpa(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
         mask: Optional[torch.Tensor] = None) -> torch.Tensor:
    return torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=mask)


def sdpa_with_weights(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
                      mask: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
    """Attention that also returns its weights, written out as models that
    need the weights write it (scaled_dot_product_attention does not
    return them)."""
    scores = q @ k.transpose(-2, -1) * (1.0 / math.sqrt(q.shape[-1])) + mask
    weights = torch.softmax(scores, dim=-1)
    return weights @ v, weights


def attention_bound(q: tol.Bounded, k: tol.Bounded, v: tol.Bounded, mask: Optional[torch.Tensor],
                    scale_first: bool) -> Tuple[tol.Bounded, tol.Bounded]:
    """softmax(q k^T / sqrt(d) [+ mask]) v of [.., T, d] values, and the
    probabilities: the scale on the scores as they leave PSUM (the
    attention node) or on q before the matmul (nn.MultiheadAttention),
    the mask added by TENSOR_TENSOR."""
    factor = 1.0 / math.sqrt(q[0].shape[-1])
    if scale_first:
        scores = tol.matmul(tol.scale(q, factor), transposed(k))
    else:
        scores = tol.scale(tol.matmul(q, transposed(k)), factor)
    if mask is not None:
        scores = tol.add(scores, tol.exact(mask))
    p = tol.softmax(scores)
    return tol.matmul(p, v), p


def ir_ops(workdir: Path) -> list:
    """The operators of the traced program's IR, in order."""
    ir = (workdir / "model.nir").read_text()
    return re.findall(r"^[^#\n]*= (\w+)\(", ir, re.M)


def key_mask(Q: int, K: int) -> torch.Tensor:
    """An additive float mask: small values, and every seventh key a
    padding key at -10000."""
    m = 0.5 * torch.randn(Q, K)
    m[:, 3::7] = -10000.0
    return m


def padding_mask(B: int, T: int) -> torch.Tensor:
    """A key padding mask as torch users pass it, [B, 1, 1, T]: batch
    index b keeps its first T - b T // 3 keys (at least one), the others
    at -10000, for every head and query."""
    m = torch.zeros(B, 1, 1, T)
    for b in range(B):
        m[b, ..., max(1, T - b * T // 3):] = -10000.0
    return m


def sdpa_keep(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
              keep: torch.Tensor) -> torch.Tensor:
    """SDPA with a [B, K] padding mask of 1 (a key) and 0 (padding), made
    additive and viewed as [B, 1, 1, K] in the model (on the device)."""
    mask = (1.0 - keep[:, None, None, :]) * -10000.0
    return sdpa(q, k, v, mask)


@pytest.mark.parametrize("T", SEQUENCE_LENGTHS)
@pytest.mark.parametrize("form", ["mask", "keep"])
def test_sdpa_with_a_padding_mask(T: int, form: str, tmp_path: Path) -> None:
    # [2, 1, 1, T] over the 2 x 3 heads and T queries: an input of the
    # call, or computed on the device from a [2, T] input of ones and zeros.
    torch.manual_seed(T + 2)
    q, k, v = (torch.randn(2, 3, T, 64) for _ in range(3))
    mask = padding_mask(2, T)
    keep = (mask == 0).float().reshape(2, T)
    fn, arg = (sdpa, mask) if form == "mask" else (sdpa_keep, keep)
    traced = torch_neuronx.trace(fn, (q, k, v, arg), compiler_workdir=tmp_path)
    ops = ir_ops(tmp_path)
    assert ops.count("attention") == 1 and "softmax" not in ops, ops
    q, k, v = (torch.randn(2, 3, T, 64) for _ in range(3))
    out = traced(q, k, v, arg)
    expected, _ = attention_bound(tol.exact(q), tol.exact(k), tol.exact(v), mask,
                                  scale_first=False)
    reference = sdpa(q.double(), k.double(), v.double(), mask.double())
    assert torch.allclose(expected[0], reference, atol=1e-12)
    assert torch.allclose(fn(q, k, v, arg).double(), reference, atol=1e-5)
    tol.check(out, expected)


@pytest.mark.parametrize("T", SEQUENCE_LENGTHS)
@pytest.mark.parametrize("masked", [True, False])
def test_sdpa_is_one_attention_node(T: int, masked: bool, tmp_path: Path) -> None:
    torch.manual_seed(T)
    q, k, v = (torch.randn(2, 3, T, 64) for _ in range(3))
    if masked:  # one [T, T] mask for the 2 x 3 heads, an input of the call
        traced = torch_neuronx.trace(sdpa, (q, k, v, key_mask(T, T)), compiler_workdir=tmp_path)
    else:
        traced = torch_neuronx.trace(sdpa, (q, k, v), compiler_workdir=tmp_path)
    ops = ir_ops(tmp_path)
    assert ops.count("attention") == 1 and "softmax" not in ops, ops
    q, k, v = (torch.randn(2, 3, T, 64) for _ in range(3))
    mask = key_mask(T, T) if masked else None
    out = traced(q, k, v, mask) if masked else traced(q, k, v)
    expected, _ = attention_bound(tol.exact(q), tol.exact(k), tol.exact(v), mask,
                                  scale_first=False)
    reference = sdpa(q.double(), k.double(), v.double(), mask.double() if masked else None)
    assert torch.allclose(expected[0], reference, atol=1e-12)
    tol.check(out, expected)


def test_sdpa_weights_keep_the_decomposition(tmp_path: Path) -> None:
    # The attention weights are the softmax of the decomposition: used,
    # they are an output of the program.
    T = 77
    torch.manual_seed(5)
    q, k, v = (torch.randn(2, 3, T, 64) for _ in range(3))
    traced = torch_neuronx.trace(sdpa_with_weights, (q, k, v, key_mask(T, T)),
                                 compiler_workdir=tmp_path)
    # written out, with its weights an output: no attention node, one
    # softmax whose result the program returns
    ops = ir_ops(tmp_path)
    assert "attention" not in ops and ops.count("softmax") == 1, ops
    q, k, v = (torch.randn(2, 3, T, 64) for _ in range(3))
    mask = key_mask(T, T)
    out, weights = traced(q, k, v, mask)
    expected, probabilities = attention_bound(tol.exact(q), tol.exact(k), tol.exact(v), mask,
                                              scale_first=False)
    tol.check(out, expected)
    tol.check(weights, probabilities)


@pytest.mark.parametrize("T", [77, 200])
@pytest.mark.parametrize("padding", [False, True])
def test_sdpa_with_and_without_weights_agree(T: int, padding: bool, tmp_path: Path) -> None:
    # Whether the attention weights are used or not, the scores are
    # scaled by the same 1/sqrt(d) as they leave the matmul: the two
    # programs compute the same output, bit for bit. With d = 48, whose
    # square root is not a power of two, dividing q by it instead would
    # round differently.
    torch.manual_seed(T + 1)
    d = 48
    q, k, v = (torch.randn(2, 3, T, d) for _ in range(3))
    mask = padding_mask(2, T) if padding else key_mask(T, T)
    node = torch_neuronx.trace(sdpa, (q, k, v, mask), compiler_workdir=tmp_path / "node")
    weighted = torch_neuronx.trace(sdpa_with_weights, (q, k, v, mask),
                                   compiler_workdir=tmp_path / "weights")
    assert ir_ops(tmp_path / "node") == ["attention"]
    assert "attention" not in ir_ops(tmp_path / "weights")
    q, k, v = (torch.randn(2, 3, T, d) for _ in range(3))
    out = node(q, k, v, mask)
    out_w, weights = weighted(q, k, v, mask)
    assert torch.equal(out, out_w), f"max difference {(out - out_w).abs().max().item():.3g}"
    expected, probabilities = attention_bound(tol.exact(q), tol.exact(k), tol.exact(v), mask,
                                              scale_first=False)
    tol.check(out, expected)
    tol.check(weights, probabilities)


class MaskedMultiheadAttention(torch.nn.Module):
    """nn.MultiheadAttention (batch_first) with one [T, T] float attn_mask
    for every head, a buffer of the module."""

    def __init__(self, d: int, n_heads: int, mask: torch.Tensor) -> None:
        super().__init__()
        self.attn = torch.nn.MultiheadAttention(d, n_heads, batch_first=True)
        self.register_buffer("mask", mask)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.attn(x, x, x, attn_mask=self.mask, need_weights=False)[0]


def multihead_bound(model: MaskedMultiheadAttention, x: tol.Bounded) -> tol.Bounded:
    """in_proj (bias in PSUM), heads, q / sqrt(d), scores + mask, softmax,
    the values, out_proj."""
    attn = model.attn
    d = x[0].shape[-1]
    qkv = tol.linear_of(x, attn.in_proj_weight, attn.in_proj_bias)
    q, k, v = (heads(columns(qkv, i * d, (i + 1) * d), attn.num_heads) for i in range(3))
    y, _ = attention_bound(q, k, v, model.mask.double(), scale_first=True)
    return tol.linear_of(merge(y), attn.out_proj.weight, attn.out_proj.bias)


@pytest.mark.parametrize("T", [50, 200])
def test_multihead_attention_with_a_2d_mask(T: int, tmp_path: Path) -> None:
    torch.manual_seed(T)
    model = MaskedMultiheadAttention(64, 4, key_mask(T, T)).eval()
    x = torch.randn(2, T, 64)
    traced = torch_neuronx.trace(model, (x,), compiler_workdir=tmp_path)
    ops = ir_ops(tmp_path)
    # on the device, no partition: torch's attention, one node of the IR
    assert ops.count("attention") == 1, ops
    x = torch.randn(2, T, 64)
    with torch.no_grad():
        out = traced(x)
        expected = multihead_bound(copy.deepcopy(model), tol.exact(x))
        assert torch.allclose(expected[0], copy.deepcopy(model).double()(x.double()), atol=1e-10)
    tol.check(out, expected)


class PaddedMultiheadAttention(torch.nn.Module):
    """nn.MultiheadAttention (batch_first) with a float key_padding_mask
    [B, T], an input of the call: torch views it as [B, 1, 1, T], expands
    it over the heads and adds it to every query's scores through
    baddbmm as [B * H, 1, T]."""

    def __init__(self, d: int, n_heads: int) -> None:
        super().__init__()
        self.attn = torch.nn.MultiheadAttention(d, n_heads, batch_first=True)

    def forward(self, x: torch.Tensor, padding: torch.Tensor) -> torch.Tensor:
        return self.attn(x, x, x, key_padding_mask=padding, need_weights=False)[0]


def padded_multihead_bound(model: PaddedMultiheadAttention, x: tol.Bounded,
                           padding: torch.Tensor) -> tol.Bounded:
    attn = model.attn
    d = x[0].shape[-1]
    qkv = tol.linear_of(x, attn.in_proj_weight, attn.in_proj_bias)
    q, k, v = (heads(columns(qkv, i * d, (i + 1) * d), attn.num_heads) for i in range(3))
    y, _ = attention_bound(q, k, v, padding[:, None, None, :].double(), scale_first=True)
    return tol.linear_of(merge(y), attn.out_proj.weight, attn.out_proj.bias)


@pytest.mark.parametrize("T", SEQUENCE_LENGTHS)
def test_multihead_attention_with_a_key_padding_mask(T: int, tmp_path: Path) -> None:
    # A float mask: the expanded mask is not copied, the device adds the
    # [B, 1, 1, T] input to the scores seen as [B, H, T, T]. A padding key
    # at -inf and at -10000 gives the same bits (exp underflows to 0 for
    # both), and the -10000 form is checked against the bound. A bool mask
    # (True at padding) is an fp32 input of 0 and 1 on the device, made
    # additive by two products that overflow to -inf: the same bits again,
    # also once saved and loaded.
    torch.manual_seed(T + 3)
    model = PaddedMultiheadAttention(64, 4).eval()
    x = torch.randn(2, T, 64)
    padding = padding_mask(2, T).reshape(2, T)
    padded = padding != 0
    traced = torch_neuronx.trace(model, (x, padding), compiler_workdir=tmp_path / "float")
    traced_bool = torch_neuronx.trace(model, (x, padded), compiler_workdir=tmp_path / "bool")
    for form in ("float", "bool"):
        ops = ir_ops(tmp_path / form)
        assert ops.count("attention") == 1, ops  # on the device, the mask its operand
    x = torch.randn(2, T, 64)
    out = traced(x, padding)
    for other in (traced(x, padding.masked_fill(padded, float("-inf"))), traced_bool(x, padded)):
        assert torch.equal(out, other), f"max difference {(out - other).abs().max().item():.3g}"
    with torch.no_grad():
        expected = padded_multihead_bound(copy.deepcopy(model), tol.exact(x), padding)
        reference = copy.deepcopy(model).double()(x.double(), padding.double())
        assert torch.allclose(expected[0], reference, atol=1e-10)
    tol.check(out, expected)
    torch.jit.save(traced_bool, str(tmp_path / "model.pt"))
    assert torch.equal(torch.jit.load(str(tmp_path / "model.pt"))(x, padded), out)
    with pytest.raises(torch.jit.Error, match=re.escape("neuron: input 1 was traced as "
                                                        "torch.bool (a mask); pass a bool tensor")):
        traced_bool(x, padding)


def test_a_bool_input_only_masks() -> None:
    # The device has no bool: a bool input is taken only as the mask of
    # masked_fill on zeros; anything else is refused, saying why.
    x, m = torch.randn(4, 5), torch.rand(4, 5) > 0.5

    def product(x: torch.Tensor, m: torch.Tensor) -> torch.Tensor:
        return x * m

    def filled(x: torch.Tensor, m: torch.Tensor) -> torch.Tensor:
        return x.masked_fill(m, float("-inf"))

    def returned(x: torch.Tensor, m: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
        return torch.relu(x), m.transpose(0, 1)

    with pytest.raises(torch_neuronx.UnsupportedOperatorError,
                       match=re.escape("a bool operand of mul: the device has no bool")):
        torch_neuronx.trace(product, (x, m))
    with pytest.raises(torch_neuronx.UnsupportedOperatorError,
                       match=re.escape("masked_fill of a tensor other than zeros by a mask from "
                                       "the inputs")):
        torch_neuronx.trace(filled, (x, m))
    with pytest.raises(RuntimeError, match="returns a bool tensor; the device has no bool"):
        torch_neuronx.trace(returned, (x, m))


def test_an_expanded_tensor_is_not_copied() -> None:
    # An expand whose result an operator would need in memory is refused,
    # naming the shapes and where the device takes it.
    def f(x: torch.Tensor) -> torch.Tensor:
        return torch.relu(x.expand(3, 4, 5))

    with pytest.raises(torch_neuronx.UnsupportedOperatorError,
                       match=re.escape("aten::relu is not supported on the neuron device: self is "
                                       "a tensor expanded from [4, 1] to [3, 4, 5], which the "
                                       "device takes only as an operand of add, sub, mul, div or "
                                       "baddbmm's mask")):
        torch_neuronx.trace(f, (torch.randn(4, 1),))


@pytest.mark.parametrize("mask_shape", [(77, 1), (2, 1, 77, 1)])
@pytest.mark.parametrize("weights", [False, True])
def test_a_mask_the_device_does_not_add_is_refused(mask_shape: Tuple[int, ...], weights: bool,
                                                   tmp_path: Path) -> None:
    # torch broadcasts a mask over the keys; the device does not (only one
    # value, or one per row of scores): refused before compiling, naming
    # the mask's shape, the scores' and why, and with a partitioner the
    # attention runs on the CPU.
    q, k, v = (torch.randn(2, 3, 77, 64) for _ in range(3))
    mask = torch.randn(mask_shape)
    fn = sdpa_with_weights if weights else sdpa
    shape = ", ".join(str(n) for n in mask_shape)
    if weights:
        # Written out, the mask is an operand of an addition, whose
        # broadcast the compiler checks when it compiles (not when the
        # graph is lowered): refused with the compiler's reason.
        with pytest.raises(RuntimeError, match=re.escape(
                "neuron compiler: 'add' (add of mul: fp32[2, 3, 77, 77], mask: "
                f"fp32[{shape}] -> fp32[2, 3, 77, 77]): broadcast pattern not lowered")):
            torch_neuronx.trace(fn, (q, k, v, mask))
        return
    refusal = ("aten::_scaled_dot_product_flash_attention_for_cpu is not supported on the "
               f"neuron device: attn_mask of shape [{shape}] against attention scores of "
               "shape [2, 3, 77, 77]: it is broadcast over the 77 keys")
    with pytest.raises(torch_neuronx.UnsupportedOperatorError, match=re.escape(refusal)):
        torch_neuronx.trace(fn, (q, k, v, mask), compiler_workdir=tmp_path)
    assert not (tmp_path / "model.nir").exists()  # nothing compiled
    with pytest.warns(torch_neuronx.PartitionWarning, match="_scaled_dot_product_flash_attention"):
        traced = torch_neuronx.trace(fn, (q, k, v, mask),
                                     partitioner_config=torch_neuronx.PartitionerConfig(
                                         model_support_percentage_threshold=0.0))
    q, k, v = (torch.randn(2, 3, 77, 64) for _ in range(3))
    assert torch.equal(traced(q, k, v, mask), fn(q, k, v, mask))


def test_a_mask_the_device_does_not_add_through_baddbmm() -> None:
    # The same check for a mask added to baddbmm's scores.
    def scores(mask: torch.Tensor, q: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
        return torch.softmax(torch.baddbmm(mask, q, k.transpose(1, 2)), -1)

    q, k = torch.randn(6, 77, 64), torch.randn(6, 50, 64)
    with pytest.raises(torch_neuronx.UnsupportedOperatorError,
                       match=re.escape("aten::baddbmm is not supported on the neuron device: the "
                                       "mask (baddbmm's self) of shape [77, 1] against attention "
                                       "scores of shape [6, 77, 50]: it is broadcast over the 50 "
                                       "keys")):
        torch_neuronx.trace(scores, (torch.zeros(77, 1), q, k))
