# SPDX-License-Identifier: MIT
"""Training throughput of a transformers GPT-2 config (4 layers, 256 wide,
4 heads, sequence 128, batch 8, AdamW; random weights, synthetic tokens)
in tokens per second, side by side in one run with the rounds alternating:
torch on the CPU eagerly and under torch.compile's default (Inductor), and
the `neuron` device eagerly and under torch.compile(backend="neuron"). The
first step of each compiled form is timed apart (its compile). Prints a
table and writes JSON (docs/torch.md, "Training")."""

from __future__ import annotations

import argparse
import json
import statistics
import time
from typing import Any, Callable, Dict, List

import torch
import transformers

import torch_neuronx  # noqa: F401

LAYERS, WIDTH, HEADS, SEQUENCE, BATCH, VOCAB = 4, 256, 4, 128, 8, 1024


def make_step(device: str, compiled: bool) -> Callable[[torch.Tensor], float]:
    torch.manual_seed(0)
    model = transformers.GPT2LMHeadModel(transformers.GPT2Config(
        vocab_size=VOCAB, n_layer=LAYERS, n_embd=WIDTH, n_head=HEADS, n_positions=SEQUENCE,
        resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0, bos_token_id=0,
        eos_token_id=0)).to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4)

    def loss_of(ids: torch.Tensor) -> torch.Tensor:
        return model(ids, labels=ids).loss
    forward = loss_of
    if compiled:
        forward = torch.compile(loss_of, backend="neuron" if device == "neuron" else "inductor")

    def step(ids: torch.Tensor) -> float:
        loss = forward(ids.to(device))
        loss.backward()
        opt.step()
        opt.zero_grad()
        return loss.item()  # waits for the step
    return step


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--steps", type=int, default=5, help="timed steps per round")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--forms", default="cpu,cpu-inductor,neuron,neuron-compiled",
                        help="comma-separated subset of the four forms")
    parser.add_argument("--json", help="write the figures here")
    args = parser.parse_args()

    forms = args.forms.split(",")
    data = torch.Generator().manual_seed(1)
    batch = torch.randint(0, VOCAB, (BATCH, SEQUENCE), generator=data)
    steps: Dict[str, Callable[[torch.Tensor], float]] = {}
    first: Dict[str, float] = {}
    errors: Dict[str, str] = {}
    for form in forms:
        device = "neuron" if form.startswith("neuron") else "cpu"
        try:
            steps[form] = make_step(device, compiled=form.endswith(("inductor", "compiled")))
            started = time.perf_counter()
            steps[form](batch)
            first[form] = time.perf_counter() - started
        except Exception as e:  # noqa: BLE001 - reported as the form's result
            errors[form] = f"{type(e).__name__}: {e}".splitlines()[0]
            steps.pop(form, None)
    rates: Dict[str, List[float]] = {f: [] for f in steps}
    for _ in range(args.rounds):
        for form, step in steps.items():
            step(batch)  # one untimed step: the round starts warm
            started = time.perf_counter()
            for _ in range(args.steps):
                step(batch)
            rates[form].append(args.steps * BATCH * SEQUENCE / (time.perf_counter() - started))

    result: Dict[str, Any] = {"threads": torch.get_num_threads(), "forms": {}}
    print(f"GPT-2 {LAYERS} layers, {WIDTH} wide, sequence {SEQUENCE}, batch {BATCH}, "
          f"torch {torch.__version__}, {torch.get_num_threads()} threads")
    print(f"{'form':18} {'tokens/s median [min, max]':>34} {'first step s':>13}")
    for form in forms:
        if form in errors:
            print(f"{form:18} failed: {errors[form]}")
            result["forms"][form] = {"error": errors[form]}
            continue
        r = rates[form]
        print(f"{form:18} {statistics.median(r):12.0f} [{min(r):8.0f}, {max(r):8.0f}] "
              f"{first[form]:13.2f}")
        result["forms"][form] = {"tokens_per_s": r, "first_step_s": first[form]}
    if "cpu" in rates:
        base = statistics.median(rates["cpu"])
        for form in rates:
            print(f"{form} / cpu eager: {statistics.median(rates[form]) / base:.2f}x")
    if "cpu-inductor" in rates and "neuron-compiled" in rates:
        print("neuron-compiled / cpu-inductor: "
              f"{statistics.median(rates['neuron-compiled']) / statistics.median(rates['cpu-inductor']):.2f}x; "
              f"first step {first['neuron-compiled'] / first['cpu-inductor']:.2f}x Inductor's")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=1)


if __name__ == "__main__":
    main()
