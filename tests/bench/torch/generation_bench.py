# SPDX-License-Identifier: MIT
"""Generation with transformers' static KV cache: a GPT-2-small-sized
config (12 layers, width 768, 12 heads, vocabulary 50257: 124M
parameters, random weights), greedy, batch 1 and 8, on the device (the
decode step compiled with torch.compile(backend="neuron"), warmed up
first) and with torch on the CPU (the same static cache, eager, the same
thread count), in one run, the two alternating round by round: time to
first token (generate() of one token: the prefill) and decode tokens/s
(the tokens after the first, all rows, over the time they added)
(docs/torch.md, "Generation")."""

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


def timed_generate(model: torch.nn.Module, ids: torch.Tensor, new_tokens: int,
                   compiled: bool) -> float:
    device = next(model.parameters()).device
    options = {"disable_compile": True}
    if compiled:
        options = {"disable_compile": False, "compile_config": transformers.CompileConfig(
            backend="neuron", mode=None, dynamic=False, fullgraph=False)}
    started = time.perf_counter()
    with torch.no_grad():
        out = model.generate(ids.to(device), attention_mask=torch.ones_like(ids).to(device),
                             max_new_tokens=new_tokens, min_new_tokens=new_tokens,
                             do_sample=False, cache_implementation="static", **options)
        out.cpu()
    return time.perf_counter() - started


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
        for n in (1, args.new_tokens):
            timed_generate(device, ids, n, True)
        graphs = compile_statistics.graphs
        times: Dict[str, Dict[str, List[float]]] = {
            w: {"first": [], "all": []} for w in ("cpu", "neuron")}
        for _ in range(args.rounds):
            for where, model in (("cpu", cpu), ("neuron", device)):
                compiled = where == "neuron"
                times[where]["first"].append(timed_generate(model, ids, 1, compiled))
                times[where]["all"].append(timed_generate(model, ids, args.new_tokens, compiled))
        assert compile_statistics.graphs == graphs, "decoding compiled after the warm-up"
        decoded = batch * (args.new_tokens - 1)
        figures = {}
        for where in ("cpu", "neuron"):
            first = statistics.median(times[where]["first"])
            rate = [decoded / (a - f) for a, f in zip(times[where]["all"], times[where]["first"])]
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
