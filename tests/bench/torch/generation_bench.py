# SPDX-License-Identifier: MIT
"""Generation with transformers' static KV cache: a GPT-2-small-sized
config (12 layers, width 768, 12 heads, vocabulary 50257: 124M
parameters, random weights), greedy, batch 1 and 8, on the device (the
decode step compiled with torch.compile(backend="neuron"), warmed up
first) and with torch on the CPU (the same static cache, eager, the same
thread count), in one run, the two alternating round by round: time to
first token (the prefill, from the call) and decode tokens/s (the tokens
after the first, all rows, over the time from the first to the last)
(docs/torch.md, "Generation"): each from one generate(), by when each
step's tokens reach the host."""

from __future__ import annotations

import argparse
import statistics
import time
from typing import Dict, List, Tuple

import torch
import transformers

import torch_neuronx  # noqa: F401
from torch_neuronx.dynamo import statistics as compile_statistics


def gpt2_small(layers: int, vocab: int) -> torch.nn.Module:
    torch.manual_seed(0)
    return transformers.GPT2LMHeadModel(transformers.GPT2Config(
        n_layer=layers, n_embd=768, n_head=12, n_positions=1024, vocab_size=vocab,
        resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0, bos_token_id=vocab - 1,
        eos_token_id=vocab - 1, pad_token_id=vocab - 1)).eval()


class Clock:
    """A generate() streamer that notes when each step's tokens reach the
    host (generate() hands them over as CPU tensors: the device's step is
    done): its first put() is the prompt, the next ones the new tokens."""

    def __init__(self) -> None:
        self.times: List[float] = []

    def put(self, value: torch.Tensor) -> None:
        self.times.append(time.perf_counter())

    def end(self) -> None:
        pass


def timed_generate(model: torch.nn.Module, ids: torch.Tensor, new_tokens: int,
                   compiled: bool) -> Tuple[float, float]:
    """Time to first token (s) and decode tokens/s (all rows, the tokens
    after the first) of one generate()."""
    device = next(model.parameters()).device
    options: Dict[str, object] = {"disable_compile": True}
    if compiled:
        options = {"disable_compile": False, "compile_config": transformers.CompileConfig(
            backend="neuron", mode=None, dynamic=False, fullgraph=False)}
    clock = Clock()
    started = time.perf_counter()
    with torch.no_grad():
        model.generate(ids.to(device), attention_mask=torch.ones_like(ids).to(device),
                       max_new_tokens=new_tokens, min_new_tokens=new_tokens, do_sample=False,
                       cache_implementation="static", streamer=clock, **options)
    tokens = clock.times[1:]
    assert len(tokens) == new_tokens, f"{len(tokens)} steps noted, not {new_tokens}"
    rate = ids.shape[0] * (new_tokens - 1) / (tokens[-1] - tokens[0])
    return tokens[0] - started, rate


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--batches", type=int, nargs="+", default=[1, 8])
    parser.add_argument("--prompt", type=int, default=128, help="prompt tokens")
    parser.add_argument("--new-tokens", type=int, default=16)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--layers", type=int, default=12, help="fewer for a short run")
    parser.add_argument("--vocab", type=int, default=50257)
    parser.add_argument("--threads", type=int, default=torch.get_num_threads())
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    cpu = gpt2_small(args.layers, args.vocab)
    device = gpt2_small(args.layers, args.vocab).to("neuron")
    params = sum(p.numel() for p in cpu.parameters())
    print(f"GPT-2 config: {args.layers} layers, vocabulary {args.vocab}, {params / 1e6:.1f}M "
          f"parameters; prompt "
          f"{args.prompt} tokens, {args.new_tokens} new; torch {torch.__version__}, "
          f"{torch.get_num_threads()} threads")
    data = torch.Generator().manual_seed(0)
    rows: List[Tuple[str, str, str, str]] = []
    for batch in args.batches:
        ids = torch.randint(0, args.vocab - 1, (batch, args.prompt), generator=data)
        # Warm-up: the device's kernels and the decode graph (its shapes fixed).
        timed_generate(device, ids, args.new_tokens, True)
        graphs = compile_statistics.graphs
        runs: Dict[str, List[Tuple[float, float]]] = {"cpu": [], "neuron": []}
        for _ in range(args.rounds):
            for where, model in (("cpu", cpu), ("neuron", device)):
                runs[where].append(timed_generate(model, ids, args.new_tokens, where == "neuron"))
        assert compile_statistics.graphs == graphs, "decoding compiled after the warm-up"
        figures = {}
        for where in ("cpu", "neuron"):
            first = statistics.median(f for f, _ in runs[where])
            rate = [r for _, r in runs[where]]
            figures[where] = (first, statistics.median(rate), min(rate), max(rate))
        for where in ("cpu", "neuron"):
            first, rate, low, high = figures[where]
            rows.append((f"batch {batch}, {where}", f"{first * 1e3:.0f} ms",
                         f"{rate:.2f} [{low:.2f}, {high:.2f}]", ""))
        rows[-1] = rows[-1][:3] + (f"{figures['neuron'][1] / figures['cpu'][1]:.3f}x",)
    print("| | time to first token (median) | decode tokens/s, median [min, max] | "
          "device / CPU |")
    print("| --- | --- | --- | --- |")
    for row in rows:
        print("| " + " | ".join(row) + " |")


if __name__ == "__main__":
    main()
