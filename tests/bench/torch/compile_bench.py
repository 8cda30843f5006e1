# SPDX-License-Identifier: MIT
"""torch.compile(backend="neuron") on an MLP training step (forward, MSE
loss, backward, SGD step): in a first process with an empty program
cache, then in a second process over the same cache, the programs
compiled and read from disk, the first step's time (Dynamo, AOTAutograd,
the backend's graphs: values, lowering, programs) and the median step
time with min and max; and the same step eagerly on the device, its
kernels cached (docs/torch.md, "torch.compile")."""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Any, Dict, List


def child(steps: int, compiled: bool) -> Dict[str, Any]:
    import torch
    import torch.nn.functional as F

    import torch_neuronx  # noqa: F401
    from torch_neuronx.dynamo import statistics as stats

    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(256, 512), torch.nn.GELU(),
                                torch.nn.Linear(512, 256)).to("neuron")
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)

    def loss_of(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return F.mse_loss(model(x), y)
    run = torch.compile(loss_of, backend="neuron") if compiled else loss_of
    x, y = torch.randn(64, 256, device="neuron"), torch.randn(64, 256, device="neuron")

    def step() -> float:
        loss = run(x, y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        return loss.item()
    t0 = time.perf_counter()
    step()
    first = time.perf_counter() - t0
    times: List[float] = []
    for _ in range(steps):
        t0 = time.perf_counter()
        step()
        times.append(time.perf_counter() - t0)
    return {"first_step_ms": first * 1e3, "step_ms": statistics.median(times) * 1e3,
            "step_ms_min": min(times) * 1e3, "step_ms_max": max(times) * 1e3,
            "compiled": stats.compiled, "loaded": stats.loaded,
            "compile_ms": stats.compile_seconds * 1e3, "graphs": stats.graphs,
            "graphs_ms": stats.graph_seconds * 1e3,
            "programs_run": torch_neuronx.get_compiled_programs()}


def run_child(cache: str, steps: int, compiled: bool) -> Dict[str, Any]:
    args = [sys.executable, __file__, "--child", "--steps", str(steps)]
    if not compiled:
        args.append("--eager")
    r = subprocess.run(args, env=dict(os.environ, NEURON_EAGER_CACHE=cache),
                       capture_output=True, text=True, check=False)
    if r.returncode != 0:
        raise SystemExit(f"compile_bench: the child failed:\n{r.stderr}")
    return json.loads(r.stdout.splitlines()[-1])


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--steps", type=int, default=50)
    p.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--eager", action="store_true", help=argparse.SUPPRESS)
    a = p.parse_args()
    if a.child:
        print(json.dumps(child(a.steps, compiled=not a.eager)))
        return
    with tempfile.TemporaryDirectory(prefix="neuron-compile-bench-") as cache:
        results = {"compiled, first process": run_child(cache, a.steps, True),
                   "compiled, second process": run_child(cache, a.steps, True)}
        run_child(cache, 1, False)  # the eager kernels of the forward and backward
        results["eager, kernels cached"] = run_child(cache, a.steps, False)
    for name, r in results.items():
        print(f"{name}: first step {r['first_step_ms']:.0f} ms, step {r['step_ms']:.2f} "
              f"[{r['step_ms_min']:.2f}, {r['step_ms_max']:.2f}] ms, programs compiled "
              f"{r['compiled']} ({r['compile_ms']:.0f} ms), read from disk {r['loaded']}, "
              f"graphs {r['graphs']} ({r['graphs_ms']:.0f} ms), program runs {r['programs_run']}")


if __name__ == "__main__":
    main()
