# SPDX-License-Identifier: MIT
"""torch_neuronx.generation: prompts of different lengths padded to
sequence buckets and batch sizes, grouped by bucket and generated on the
device with a static cache and the compiled decode step: the tokens equal
the same grouping's on the CPU, each (batch, bucket) compiles once, and
what does not fit the buckets is refused by name (docs/torch.md,
"Generation")."""

import pytest
import torch
import transformers

from torch_neuronx.dynamo import statistics
from torch_neuronx.generation import BatchGenerator, Buckets, pad, plan

VOCAB, NEW_TOKENS = 256, 8
BUCKETS = Buckets(sequence=(8, 16), batch=(1, 2, 4))


def model() -> torch.nn.Module:
    torch.manual_seed(0)
    return transformers.GPT2LMHeadModel(transformers.GPT2Config(
        vocab_size=VOCAB, n_layer=2, n_embd=64, n_head=4, n_positions=64, resid_pdrop=0.0,
        embd_pdrop=0.0, attn_pdrop=0.0, bos_token_id=0, eos_token_id=0, pad_token_id=0)).eval()


def prompts(lengths, seed: int = 0):
    data = torch.Generator().manual_seed(seed)
    return [torch.randint(1, VOCAB, (n,), generator=data).tolist() for n in lengths]


def test_plan_groups_by_bucket_and_pads() -> None:
    some = prompts([3, 12, 8, 1])
    groups = plan(some, BUCKETS)
    assert [(g.bucket, g.batch, g.which) for g in groups] == [(8, 4, [0, 2, 3]), (16, 1, [1])]
    ids, mask = pad(some, groups[0], 0)
    assert ids.shape == mask.shape == (4, 8)
    assert ids[0, 5:].tolist() == some[0] and mask[0].tolist() == [0] * 5 + [1] * 3
    assert ids[3].tolist() == ids[0].tolist(), "a padding row repeats the first prompt"


def test_what_does_not_fit_is_refused_by_name() -> None:
    with pytest.raises(ValueError, match=r"prompt 1 has 17 tokens, more than the largest sequence "
                                         r"bucket \(16\): add a larger one to Buckets\(sequence="):
        plan(prompts([4, 17]), BUCKETS)
    with pytest.raises(ValueError, match=r"5 prompts, more than the largest batch size \(4\): add "
                                         r"a larger one to Buckets\(batch=\.\.\.\)"):
        plan(prompts([1, 2, 3, 4, 5]), BUCKETS)
    with pytest.raises(ValueError, match="prompt 0 is empty"):
        plan([[]], BUCKETS)
    with pytest.raises(ValueError, match="must be positive"):
        Buckets(sequence=(0, 8))


def test_batches_on_the_device_match_the_cpu_and_compile_once_per_shape() -> None:
    cpu = model()
    some = prompts([3, 12, 8, 9])
    options = dict(min_new_tokens=NEW_TOKENS)
    expected = BatchGenerator(cpu, NEW_TOKENS, BUCKETS, compile=False, **options).generate(some)
    device = BatchGenerator(model().to("neuron"), NEW_TOKENS, BUCKETS, **options)
    graphs = statistics.graphs
    got = device.generate(some)
    assert got == expected
    assert all(len(t) == NEW_TOKENS for t in got)
    # Two groups: (batch 2, bucket 8) and (batch 2, bucket 16), a decode graph each.
    assert statistics.graphs - graphs == 2
    # Other prompts of the same buckets: nothing compiles.
    warm = statistics.graphs
    again = prompts([5, 16, 2, 10], seed=1)
    assert device.generate(again) == BatchGenerator(cpu, NEW_TOKENS, BUCKETS, compile=False,
                                                    **options).generate(again)
    assert statistics.graphs == warm, "a second call of the same shapes compiled"
