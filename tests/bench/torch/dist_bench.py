# SPDX-License-Identifier: MIT
"""The `neuron` process group's cost, run under torchrun (2 ranks, each
its own core; docs/distributed.md):

    torchrun --standalone --nproc-per-node 2 tests/bench/torch/dist_bench.py

1. all_reduce (sum, float32) of 1, 16 and 64 MiB: `neuron` tensors through
   the neuron backend against CPU tensors through Gloo, in one process
   group ("cpu:gloo,neuron:neuron") with the rounds alternating; time,
   algbw and busbw (nccl-tests' definitions: algbw = bytes / time, busbw =
   algbw x 2 (n - 1) / n).
   Also the staging alone: a copy of the neuron tensor to the host and
   back (no collective), what the backend adds to Gloo's time.
2. A DDP training step of GPT-2 (4 layers, 256 wide, sequence 128, batch 4
   per rank, AdamW) against the same step under `no_sync()` (no gradient
   all_reduce), rounds alternating.

Rank 0 prints the tables (and writes JSON with --json)."""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from typing import Callable, Dict, List

import torch
import torch.distributed as dist
import transformers
from torch.nn.parallel import DistributedDataParallel as DDP

import torch_neuronx  # noqa: F401

MIB = 1 << 20
LAYERS, WIDTH, HEADS, SEQUENCE, BATCH, VOCAB = 4, 256, 4, 128, 4, 1024


def timed(call: Callable[[], None], repeats: int) -> float:
    """Seconds per call (each call waits for its result)."""
    dist.barrier(device_ids=None)
    started = time.perf_counter()
    for _ in range(repeats):
        call()
    return (time.perf_counter() - started) / repeats


def all_reduce_figures(sizes: List[int], rounds: int, repeats: int) -> Dict[str, Dict]:
    world = dist.get_world_size()
    device = torch.device("neuron", int(os.environ["LOCAL_RANK"]))
    tensors = {("neuron", s): torch.ones(s // 4, device=device) for s in sizes}
    tensors.update({("cpu", s): torch.ones(s // 4) for s in sizes})
    times: Dict[str, List[float]] = {f"{kind} {s // MIB} MiB": [] for kind, s in tensors}
    for kind, s in tensors:  # warm: the first call compiles nothing but sets up buffers
        dist.all_reduce(tensors[(kind, s)])
    torch.neuron.synchronize()
    for _ in range(rounds):
        for (kind, s), t in tensors.items():
            def call(t: torch.Tensor = t, kind: str = kind) -> None:
                dist.all_reduce(t)
                if kind == "neuron":
                    torch.neuron.synchronize()
            times[f"{kind} {s // MIB} MiB"].append(timed(call, repeats))
    # What the host-staged path adds to Gloo's: the two copies alone.
    for s in sizes:
        t, host = tensors[("neuron", s)], torch.empty(s // 4)
        key = f"staging {s // MIB} MiB"
        times[key] = []
        for _ in range(rounds):
            def copies(t: torch.Tensor = t, host: torch.Tensor = host) -> None:
                host.copy_(t)
                t.copy_(host)
                torch.neuron.synchronize()
            times[key].append(timed(copies, repeats))
    out = {}
    for (kind, s) in list(tensors) + [("staging", s) for s in sizes]:
        key = f"{kind} {s // MIB} MiB"
        t = statistics.median(times[key])
        algbw = s / t / 1e9
        out[key] = {"kind": kind, "bytes": s, "time_ms": t * 1e3,
                    "time_ms_min": min(times[key]) * 1e3, "time_ms_max": max(times[key]) * 1e3,
                    "algbw_GBps": algbw, "busbw_GBps": algbw * 2 * (world - 1) / world}
    return out


def ddp_figures(rounds: int, steps: int) -> Dict[str, Dict]:
    device = torch.device("neuron", int(os.environ["LOCAL_RANK"]))
    torch.manual_seed(0)
    model = DDP(transformers.GPT2LMHeadModel(transformers.GPT2Config(
        vocab_size=VOCAB, n_layer=LAYERS, n_embd=WIDTH, n_head=HEADS, n_positions=SEQUENCE,
        resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0, bos_token_id=0,
        eos_token_id=0)).to(device))
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4)
    gen = torch.Generator().manual_seed(1 + dist.get_rank())
    ids = torch.randint(0, VOCAB, (BATCH, SEQUENCE), generator=gen).to(device)

    def step(sync: bool) -> None:
        if sync:
            loss = model(ids, labels=ids).loss
            loss.backward()
        else:
            with model.no_sync():
                loss = model(ids, labels=ids).loss
                loss.backward()
        opt.step()
        opt.zero_grad()
        loss.item()

    step(True)
    step(False)
    times: Dict[str, List[float]] = {"ddp": [], "no_sync": []}
    for _ in range(rounds):
        for form, sync in (("ddp", True), ("no_sync", False)):
            times[form].append(timed(lambda: step(sync), steps))
    params = sum(p.numel() for p in model.parameters())
    return {form: {"step_ms": statistics.median(t) * 1e3, "min_ms": min(t) * 1e3,
                   "max_ms": max(t) * 1e3, "parameters": params} for form, t in times.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes-mib", default="1,16,64")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--repeats", type=int, default=3, help="all_reduces per round and size")
    parser.add_argument("--steps", type=int, default=3, help="DDP steps per round and form")
    parser.add_argument("--json", help="rank 0 writes the figures here")
    args = parser.parse_args()
    dist.init_process_group("cpu:gloo,neuron:neuron")
    figures = {"all_reduce": all_reduce_figures(
        [int(s) * MIB for s in args.sizes_mib.split(",")], args.rounds, args.repeats),
        "ddp": ddp_figures(args.rounds, args.steps)}
    if dist.get_rank() == 0:
        world = dist.get_world_size()
        print(f"all_reduce, {world} ranks, float32 sum, median of {args.rounds} rounds "
              f"[min, max] of {args.repeats} calls each")
        print(f"{'tensors':>8} {'size':>7} {'time ms':>24} {'algbw GB/s':>11} {'busbw GB/s':>11}")
        for key, f in figures["all_reduce"].items():
            bw = "" if f["kind"] == "staging" else (f" {f['algbw_GBps']:>11.3f} "
                                                   f"{f['busbw_GBps']:>11.3f}")
            print(f"{f['kind']:>8} {f['bytes'] // MIB:>4} MiB {f['time_ms']:>9.2f} "
                  f"[{f['time_ms_min']:.2f}, {f['time_ms_max']:.2f}]{bw}")
        d = figures["ddp"]
        print(f"DDP step of GPT-2 ({d['ddp']['parameters']} parameters), ms: "
              f"ddp {d['ddp']['step_ms']:.1f} [{d['ddp']['min_ms']:.1f}, {d['ddp']['max_ms']:.1f}], "
              f"no_sync {d['no_sync']['step_ms']:.1f} [{d['no_sync']['min_ms']:.1f}, "
              f"{d['no_sync']['max_ms']:.1f}], ratio {d['ddp']['step_ms'] / d['no_sync']['step_ms']:.2f}")
        if args.json:
            with open(args.json, "w") as f:
                json.dump(figures, f, indent=1)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
