# SPDX-License-Identifier: MIT
"""Hugging Face transformers models, built from their configs with random
weights (no download), trained eagerly on "neuron" as a user trains them:
every step's loss and the parameters after the last step match the same
run on the CPU (fp32; the device's matmuls and reductions add in another
order, hence the tolerance, the one test_training.py uses)."""

from typing import Callable, Dict, List, Set, Tuple

import pytest
import torch
import transformers

import torch_neuronx
from torch_neuronx.eager.fallback import fallback_calls_by_reason

STEPS = 50
RTOL, ATOL = 1e-4, 1e-5
PARAMETER_DRIFT = 1e-4
VOCAB, BATCH, SEQUENCE = 256, 4, 32

MODELS: Dict[str, Callable[[], torch.nn.Module]] = {
    "gpt2": lambda: transformers.GPT2LMHeadModel(transformers.GPT2Config(
        vocab_size=VOCAB, n_layer=2, n_embd=64, n_head=4, n_positions=64, resid_pdrop=0.0,
        embd_pdrop=0.0, attn_pdrop=0.0, bos_token_id=0, eos_token_id=0)),
    "bert": lambda: transformers.BertForMaskedLM(transformers.BertConfig(
        vocab_size=VOCAB, num_hidden_layers=2, hidden_size=64, num_attention_heads=4,
        intermediate_size=128, max_position_embeddings=64, hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0)),
    "llama": lambda: transformers.LlamaForCausalLM(transformers.LlamaConfig(
        vocab_size=VOCAB, num_hidden_layers=2, hidden_size=64, num_attention_heads=4,
        num_key_value_heads=2, intermediate_size=128, max_position_embeddings=64,
        bos_token_id=0, eos_token_id=0)),
}

# What must run on the device: the linear layers forward and backward,
# attention's products, the normalizations and activations and their
# backward, the embeddings' lookups of int64 ids, and AdamW's update (its
# foreach form).
DEVICE_OPS: Set[str] = {"aten::mm", "aten::_foreach_addcdiv.ScalarList",
                        "aten::_foreach_lerp.Scalar",
                        "aten::nll_loss_forward", "aten::nll_loss_backward",
                        "aten::embedding"}
# What may run on the CPU: operators on the token ids, masks and positions
# (int64 and bool tensors, which the device does not compute in), the
# embedding's backward (int64 ids), and their int64 companions. The
# embeddings' lookups and the loss's nll_loss run on the device, and so do
# the attention cache's cat
# of its empty start and the keys, scaled_dot_product_attention's bool
# masks (its causal tril, its safe softmax's all) and Llama's rotary sin
# and cos.
ALLOWED_FALLBACK: Set[str] = {
    "aten::add.Tensor", "aten::arange.start_out",
    "aten::constant_pad_nd", "aten::embedding_dense_backward", "aten::gather",
    "aten::where.self",
}


def batches(name: str) -> List[Tuple[torch.Tensor, torch.Tensor]]:
    """A few synthetic batches of token ids, seen again and again: a model
    can learn them, so the loss falls."""
    data = torch.Generator().manual_seed(1)
    made = []
    for _ in range(4):
        ids = torch.randint(0, VOCAB, (BATCH, SEQUENCE), generator=data)
        labels = ids.clone()
        if name == "bert":  # masked LM: 15% of the positions are predicted
            labels[torch.rand(ids.shape, generator=data) > 0.15] = -100
        made.append((ids, labels))
    return made


BATCHES = {name: batches(name) for name in MODELS}


def train(name: str, device: str) -> Tuple[List[float], torch.nn.Module]:
    torch.manual_seed(0)
    model = MODELS[name]().to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    losses = []
    for step in range(STEPS):
        ids, labels = BATCHES[name][step % len(BATCHES[name])]
        loss = model(ids.to(device), labels=labels.to(device)).loss
        loss.backward()
        opt.step()
        opt.zero_grad()
        losses.append(loss.item())
    return losses, model


@pytest.mark.parametrize("name", sorted(MODELS))
def test_training_matches_the_cpu(name: str) -> None:
    expected_losses, expected = train(name, "cpu")
    ops_before, fallback_before = torch_neuronx.get_device_ops(), fallback_calls_by_reason()
    losses, model = train(name, "neuron")
    ran = {k for k, n in torch_neuronx.get_device_ops().items() if n > ops_before.get(k, 0)}
    fell_back = {op for (op, _), n in fallback_calls_by_reason().items()
                 if n > fallback_before.get((op, _), 0)}

    torch.testing.assert_close(losses, expected_losses, rtol=RTOL, atol=ATOL)
    assert losses[-1] < 0.9 * losses[0], f"{name}: the loss did not fall: {losses[0]} -> {losses[-1]}"
    # Adam's update is about the sign of the gradient, whatever its size: a
    # gradient that is rounding noise on both sides (attention's key bias,
    # which softmax cancels) moves its parameter by the learning rate in
    # either direction. The parameters are compared as one vector.
    assert all(p.device.type == "neuron" for p in model.parameters())
    got = torch.cat([p.detach().cpu().flatten() for p in model.parameters()])
    want = torch.cat([p.detach().flatten() for p in expected.parameters()])
    drift = ((got - want).norm() / want.norm()).item()
    assert drift < PARAMETER_DRIFT, f"{name}: parameters after {STEPS} steps drift {drift:.2e}"
    assert not DEVICE_OPS - ran, f"not run on the device: {sorted(DEVICE_OPS - ran)}"
    assert fell_back <= ALLOWED_FALLBACK, f"fell back: {sorted(fell_back - ALLOWED_FALLBACK)}"


def test_tied_embedding_stays_tied() -> None:
    """The output layer of GPT-2 is its token embedding: one parameter,
    which moving the model must keep (else the two train apart)."""
    model = MODELS["gpt2"]()
    tied = model.lm_head.weight
    assert tied is model.transformer.wte.weight
    model.to("neuron")
    assert model.lm_head.weight is model.transformer.wte.weight is tied
    assert tied.device.type == "neuron"
    assert len(list(model.parameters())) == len(list(MODELS["gpt2"]().parameters()))


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=str)
def test_cat_skips_a_1d_empty_tensor_on_the_device(dtype: torch.dtype) -> None:
    """transformers' DynamicCache starts from torch.tensor([]) and cats the
    keys to it: cat skips a 1-d empty input whatever the others' shapes,
    and so does the device's kernel (a new tensor, not the keys)."""
    k = torch.randn(4, 2, 8, 16).to(dtype)
    empty = torch.tensor([], dtype=dtype)
    before = torch_neuronx.get_fallback_ops().get("aten::cat", 0)
    for parts in ([empty, k], [k, empty, k], [empty, empty, k]):
        on_device = [p.to("neuron") for p in parts]
        got = torch.cat(on_device, dim=-2)
        assert all(got.data_ptr() != p.data_ptr() for p in on_device)
        assert torch.equal(got.cpu(), torch.cat(parts, dim=-2))
    assert torch_neuronx.get_fallback_ops().get("aten::cat", 0) == before


def test_bool_masks_of_attention_on_the_device() -> None:
    """scaled_dot_product_attention's math form makes its causal mask as
    ones(bool).tril() and its safe softmax tests rows with all(): bool
    tril, triu, all and any run on the device, as on the CPU."""
    torch.manual_seed(0)
    m = torch.rand(2, 3, 8, 8) > 0.3
    d = m.to("neuron")
    before = torch_neuronx.get_fallback_ops()
    for diagonal in (0, 1, -1):
        assert torch.equal(d.tril(diagonal).cpu(), m.tril(diagonal))
        assert torch.equal(d.triu(diagonal).cpu(), m.triu(diagonal))
    for dim in (-1, 1):
        assert torch.equal(d.all(dim).cpu(), m.all(dim))
        assert torch.equal(d.all(dim, keepdim=True).cpu(), m.all(dim, keepdim=True))
        assert torch.equal(d.any(dim).cpu(), m.any(dim))
    assert torch_neuronx.get_fallback_ops() == before
