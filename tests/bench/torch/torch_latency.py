# SPDX-License-Identifier: MIT
"""Latency of SimpleLLMBlock (Linear(768, 768) + GELU on [1, 128, 768])
through torch_neuronx, from the Python call to the returned tensor, split
into the device job (submit to fence) and the bridge's own overhead (input
checks and copies, output copies, TorchScript and Python), next to the same
model on torch's CPU with one thread in the same run. Medians."""

import argparse
import json
import os
import re
import statistics
import sys
import time
from typing import Callable, Dict, List

# One CPU thread for every BLAS and OpenMP pool torch may use, not only
# the one torch.set_num_threads reaches.
for _var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import torch  # noqa: E402

import torch_neuronx  # noqa: E402


def timed(fn: Callable[[], object], n: int) -> List[float]:
    out = []
    for _ in range(n):
        t0 = time.perf_counter()
        fn()
        out.append((time.perf_counter() - t0) * 1e3)
    return out


def process_ms(fn: Callable[[], object], n: int) -> float:
    """The process's CPU time (every thread's) per call of @fn, in ms."""
    t0 = time.process_time()
    for _ in range(n):
        fn()
    return (time.process_time() - t0) / n * 1e3


def blas() -> str:
    """The BLAS torch was built with (torch.__config__)."""
    m = re.search(r"BLAS_INFO=(\w+)", torch.__config__.show())
    return m.group(1) if m else "unknown"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--iterations", type=int, default=200)
    ap.add_argument("--quick", action="store_true", help="30 iterations")
    ap.add_argument("--json", help="also write the figures to this file")
    ap.add_argument("--cpu-time", action="store_true",
                    help="also the process's CPU time per call (all threads), for loaded hosts")
    args = ap.parse_args()
    n = 30 if args.quick else args.iterations

    torch.manual_seed(0)
    torch.set_num_threads(1)
    # SimpleLLMBlock of examples/torch/simple_llm_block.py.
    model = torch.nn.Sequential(torch.nn.Linear(768, 768), torch.nn.GELU()).eval()
    x = torch.randn(1, 128, 768)
    neuron = torch_neuronx.trace(model, x)

    with torch.no_grad():
        timed(lambda: model(x), 5)
        cpu = timed(lambda: model(x), n)
    timed(lambda: neuron(x), 5)
    total, job, copies, copies_in, copies_out = [], [], [], [], []
    for _ in range(n):
        t0 = time.perf_counter()
        neuron(x)
        total.append((time.perf_counter() - t0) * 1e3)
        inputs_ms, job_ms, outputs_ms = neuron.model.last_call_ms()
        job.append(job_ms)
        copies.append(inputs_ms + outputs_ms)
        copies_in.append(inputs_ms)
        copies_out.append(outputs_ms)
    overhead = [t - j for t, j in zip(total, job)]

    med: Dict[str, float] = {
        "call_ms": statistics.median(total),
        "device_job_ms": statistics.median(job),
        "bridge_overhead_ms": statistics.median(overhead),
        "bridge_copies_ms": statistics.median(copies),
        "bridge_inputs_ms": statistics.median(copies_in),
        "bridge_outputs_ms": statistics.median(copies_out),
        "torch_cpu_ms": statistics.median(cpu),
    }
    med["bridge_overhead_pct"] = 100 * med["bridge_overhead_ms"] / med["call_ms"]
    print(f"SimpleLLMBlock [1, 128, 768] on {neuron.model.placement()}, {n} calls, medians; "
          f"torch {torch.__version__} on 1 thread, BLAS {blas()}")
    print(f"{'python call -> tensor':<28} {med['call_ms']:8.3f} ms")
    print(f"{'  device job (submit->fence)':<28} {med['device_job_ms']:8.3f} ms")
    print(f"{'  bridge overhead':<28} {med['bridge_overhead_ms']:8.3f} ms "
          f"({med['bridge_overhead_pct']:.1f}% of the call; copies {med['bridge_copies_ms']:.3f} ms: "
          f"inputs {med['bridge_inputs_ms']:.3f}, outputs {med['bridge_outputs_ms']:.3f})")
    print(f"{'torch CPU':<28} {med['torch_cpu_ms']:8.3f} ms "
          f"(call / torch CPU = {med['call_ms'] / med['torch_cpu_ms']:.2f}x)")
    if args.cpu_time:
        with torch.no_grad():
            cpu_cpu = process_ms(lambda: model(x), n)
        dev_cpu = process_ms(lambda: neuron(x), n)
        med["call_cpu_ms"], med["torch_cpu_cpu_ms"] = dev_cpu, cpu_cpu
        print(f"{'process CPU per call':<28} {dev_cpu:8.3f} ms, torch CPU {cpu_cpu:.3f} ms "
              f"(ratio {dev_cpu / cpu_cpu:.2f}x)")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(med, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
