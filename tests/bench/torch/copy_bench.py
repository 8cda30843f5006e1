# SPDX-License-Identifier: MIT
"""The cost of copies of strided views on the device (torch_neuronx/
strided.py): each view of a [384, 384] float32 tensor made contiguous,
its first call (which compiles its kernels) and the mean of the next five,
each waited for, beside the host's copy of the same view of a CPU tensor.
Run by hand (docs/torch.md, Operators):

    NEURON_DEVICE=sim NEURON_EAGER_CACHE=$(mktemp -d) PYTHONPATH=build/python \\
        "$NEURON_PYTHON" tests/bench/torch/copy_bench.py
"""

from __future__ import annotations

import time
from typing import Callable, Dict

import torch

import torch_neuronx  # noqa: F401  (the backend)

VIEWS: Dict[str, Callable[[torch.Tensor], torch.Tensor]] = {
    "transpose": lambda a: a.t(),
    "slice of 190 columns": lambda a: a[:, 10:200],
    "broadcast of a row": lambda a: a[:1].expand(384, 384),
    "head split": lambda a: a.view(384, 3, 128)[:, 1].view(384, 2, 64).transpose(0, 1),
    "every other row": lambda a: a[::2],
    "every other column": lambda a: a[:, ::2],
}
REPEATS = 5


def timed(fn: Callable[[], object], wait: Callable[[], None]) -> float:
    wait()
    started = time.perf_counter()
    fn()
    wait()
    return time.perf_counter() - started


def main() -> None:
    host = torch.randn(384, 384)
    device = host.to("neuron")
    sync = torch.neuron.synchronize
    print(f"{'view':22s} {'first call':>11s} {'device':>10s} {'host CPU':>10s}")
    for name, view in VIEWS.items():
        first = timed(lambda: view(device).contiguous(), sync)
        mean = sum(timed(lambda: view(device).contiguous(), sync)
                   for _ in range(REPEATS)) / REPEATS
        cpu = sum(timed(lambda: view(host).contiguous(), lambda: None)
                  for _ in range(REPEATS)) / REPEATS
        print(f"{name:22s} {first:10.3f}s {mean * 1e3:8.2f}ms {cpu * 1e3:8.3f}ms")


if __name__ == "__main__":
    main()
