# SPDX-License-Identifier: MIT
"""The cost of a small eager op on the `neuron` device next to its limits,
in one run: `add` of two [128, 512] float32 tensors on the device (one op
then torch.neuron.synchronize(); and 1000 ops queued, then one
synchronize) against the same op in torch on the CPU, and against
neuron-bench's no-op job on the same device (its round trip at depth 1,
its job rate at depth 8); and the first call's compile of a small op (a
new shape, nothing cached). The figures alternate round by round; each is
the median of its rounds, with min and max (docs/torch.md)."""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Callable, Dict, List

# The compile figure needs an empty kernel cache, set before the backend loads.
os.environ["NEURON_EAGER_CACHE"] = ""

import torch  # noqa: E402

import torch_neuronx  # noqa: E402
from torch_neuronx.eager import kernels  # noqa: E402

SHAPE = (128, 512)


def per_op_us(fn: Callable[[], object], n: int) -> float:
    t0 = time.perf_counter()
    for _ in range(n):
        fn()
    return (time.perf_counter() - t0) / n * 1e6


def cpu_add(n: int) -> float:
    a, b = torch.randn(SHAPE), torch.randn(SHAPE)
    torch.add(a, b)
    return per_op_us(lambda: torch.add(a, b), n)


def neuron_add_synchronized(n: int) -> float:
    a, b = torch.randn(SHAPE, device="neuron"), torch.randn(SHAPE, device="neuron")

    def op() -> None:
        torch.add(a, b)
        torch.neuron.synchronize()
    op()
    return per_op_us(op, n)


def neuron_add_queued(n: int) -> float:
    """Per op of @p n adds queued behind each other, then one synchronize."""
    a, b = torch.randn(SHAPE, device="neuron"), torch.randn(SHAPE, device="neuron")
    torch.add(a, b)
    torch.neuron.synchronize()
    t0 = time.perf_counter()
    for _ in range(n):
        torch.add(a, b)
    torch.neuron.synchronize()
    return (time.perf_counter() - t0) / n * 1e6


_next_width = [SHAPE[1]]


def first_call_compile_ms() -> float:
    """A new signature's first call: the time its kernel took to compile
    (capture, lowering, the compiler, loading the program)."""
    _next_width[0] += 1
    shape = (SHAPE[0], _next_width[0])
    a, b = torch.randn(shape, device="neuron"), torch.randn(shape, device="neuron")
    before, seconds = kernels.compiles, kernels.compile_seconds
    torch.add(a, b)
    if kernels.compiles != before + 1:
        raise RuntimeError("the first call of a new shape did not compile a kernel "
                           "(add fell back to the CPU?)")
    return (kernels.compile_seconds - seconds) * 1e3


def noop_job(neuron_bench: str, quick: bool) -> Dict[str, float]:
    """neuron-bench's no-op job on the same device: round trip (us) and
    jobs/s at depth 8."""
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "submit.json")
        cmd = [neuron_bench, "-s", "submit", "--max-depth", "8", "-r", "1", "-j", out]
        if quick:
            cmd.append("--quick")
        if os.environ.get("NEURON_DEVICE"):  # the device torch_neuronx opened
            cmd += ["-d", os.environ["NEURON_DEVICE"]]
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode != 0:
            raise RuntimeError(f"{' '.join(cmd)} failed ({r.returncode}): {r.stderr.strip()}")
        with open(out) as f:
            tables = json.load(f)["tables"]
    cell = {row["row"]: row["cells"] for row in tables["latency"]["rows"]}
    rate = {row["row"]: row["cells"] for row in tables["rate"]["rows"]}
    return {"noop_job_us": cell["depth 1"]["no-op job"]["median"],
            "noop_jobs_per_s_depth8": rate["8"]["no-op jobs"]["median"]}


def summary(values: List[float]) -> Dict[str, float]:
    return {"median": statistics.median(values), "min": min(values), "max": max(values)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--quick", action="store_true", help="3 short rounds: a check that it runs")
    ap.add_argument("--neuron-bench", default="neuron-bench", help="the neuron-bench to run")
    ap.add_argument("--json", help="also write the figures to this file")
    args = ap.parse_args()
    rounds = 3 if args.quick else args.rounds
    n = 100 if args.quick else 1000

    figures: Dict[str, List[float]] = {}
    for _ in range(rounds):
        got = {"cpu_add_us": cpu_add(n),
               "neuron_add_us": neuron_add_synchronized(n // 4),
               "neuron_add_queued_us": neuron_add_queued(1000),
               "compile_ms": first_call_compile_ms(),
               **noop_job(args.neuron_bench, args.quick)}
        for k, v in got.items():
            figures.setdefault(k, []).append(v)
    med = {k: statistics.median(v) for k, v in figures.items()}
    queued_rate = 1e6 / med["neuron_add_queued_us"]
    ratios = {
        "add / cpu add": med["neuron_add_us"] / med["cpu_add_us"],
        "add / no-op job": med["neuron_add_us"] / med["noop_job_us"],
        "queued adds/s / no-op jobs/s (depth 8)": queued_rate / med["noop_jobs_per_s_depth8"],
    }
    print(f"eager add of two {list(SHAPE)} float32 tensors on {torch.neuron.get_device_name(0)}, "
          f"torch {torch.__version__} on the CPU with {torch.get_num_threads()} threads; "
          f"{rounds} rounds, median [min, max]")
    units = {"cpu_add_us": "us", "neuron_add_us": "us (op + synchronize)",
             "neuron_add_queued_us": "us per op, 1000 queued", "compile_ms": "ms (first call)",
             "noop_job_us": "us (neuron-bench)", "noop_jobs_per_s_depth8": "1/s (neuron-bench)"}
    for k, v in figures.items():
        s = summary(v)
        print(f"  {k:24} {s['median']:12.1f} [{s['min']:.1f}, {s['max']:.1f}] {units[k]}")
    print(f"  {'queued adds/s':24} {queued_rate:12.0f}")
    for k, v in ratios.items():
        print(f"  {k:40} {v:6.2f}x")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"figures": {k: summary(v) for k, v in figures.items()},
                       "ratios": ratios, "torch_threads": torch.get_num_threads()}, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
