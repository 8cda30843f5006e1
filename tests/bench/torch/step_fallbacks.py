# SPDX-License-Identifier: MIT
"""What still runs on the CPU in a training step of test_transformers.py's
models (GPT-2, BERT, Llama), eagerly and under bfloat16 autocast: the
second step's CPU fallback calls by operator and reason (the first one
also makes AdamW's state). Run by hand (docs/torch.md, Training):

    NEURON_DEVICE=sim PYTHONPATH=build/python "$NEURON_PYTHON" \\
        tests/bench/torch/step_fallbacks.py [gpt2 bert llama]
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Dict, List, Tuple

import torch

import torch_neuronx  # noqa: F401  (the backend)
from torch_neuronx.eager.fallback import fallback_calls_by_reason

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "unit" / "torch_device"))
from test_transformers import BATCHES, MODELS  # noqa: E402


def step(name: str, model: torch.nn.Module, opt: torch.optim.Optimizer, i: int,
         autocast: bool) -> None:
    ids, labels = BATCHES[name][i % len(BATCHES[name])]
    with torch.autocast("neuron", dtype=torch.bfloat16, enabled=autocast):
        loss = model(ids.to("neuron"), labels=labels.to("neuron")).loss
    loss.backward()
    opt.step()
    opt.zero_grad()
    loss.item()


def step_fallbacks(name: str, autocast: bool) -> Dict[Tuple[str, str], int]:
    """The CPU fallback calls of one training step, by (operator, reason)."""
    torch.manual_seed(0)
    model = MODELS[name]().to("neuron")
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    step(name, model, opt, 0, autocast)
    before = fallback_calls_by_reason()
    step(name, model, opt, 1, autocast)
    return {k: n - before.get(k, 0) for k, n in fallback_calls_by_reason().items()
            if n > before.get(k, 0)}


def main(names: List[str]) -> None:
    for autocast in (False, True):
        for name in names or sorted(MODELS):
            calls = step_fallbacks(name, autocast)
            form = "autocast bf16" if autocast else "eager fp32"
            print(f"{name}, {form}: {sum(calls.values())} CPU fallback calls a step")
            for (op, why), n in sorted(calls.items(), key=lambda kv: -kv[1]):
                print(f"  {n:4d} {op}: {why}")


if __name__ == "__main__":
    main(sys.argv[1:])
