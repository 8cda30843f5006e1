# SPDX-License-Identifier: MIT
"""The time of an optimizer step alone on the parameters of train_bench's
GPT-2 config (52 tensors, 3.45 M values), gradients set once: torch on the
CPU and the `neuron` device, in torch.optim's foreach form, tensor by
tensor and fused (Adam and AdamW), side by side in one run with the forms alternating; each figure
the mean of --steps steps after three untimed ones, waited for. Run by
hand (docs/torch.md, Training):

    NEURON_DEVICE=sim:mem=4G NEURON_EAGER_CACHE=$(mktemp -d) PYTHONPATH=build/python \\
        "$NEURON_PYTHON" tests/bench/torch/optimizer_bench.py
"""

from __future__ import annotations

import argparse
import statistics
import time
from typing import Callable, Dict, List

import torch

import torch_neuronx  # noqa: F401  (the backend)
import transformers

from train_bench import VOCAB

# (form: foreach, per tensor or fused)
OPTIMIZERS: Dict[str, Callable[..., torch.optim.Optimizer]] = {
    "adamw": lambda ps, form: torch.optim.AdamW(ps, lr=3e-4, weight_decay=0.01,
                                                foreach=form == "foreach",
                                                fused=form == "fused"),
    "sgd": lambda ps, form: torch.optim.SGD(ps, lr=1e-2, momentum=0.9,
                                            foreach=form == "foreach"),
}
FORMS = {"adamw": ("foreach", "per tensor", "fused"), "sgd": ("foreach", "per tensor")}


def parameters(device: str) -> List[torch.nn.Parameter]:
    torch.manual_seed(0)
    config = transformers.GPT2Config(vocab_size=VOCAB, n_layer=4, n_embd=256, n_head=4,
                                     n_positions=128)
    params = list(transformers.GPT2LMHeadModel(config).to(device).parameters())
    for p in params:
        p.grad = torch.randn_like(p)
    return params


def wait(params: List[torch.nn.Parameter]) -> None:
    params[-1].detach().cpu()  # (the device's jobs run in order)


def step_ms(opt: torch.optim.Optimizer, params: List[torch.nn.Parameter], steps: int) -> float:
    for _ in range(3):
        opt.step()
    wait(params)
    started = time.perf_counter()
    for _ in range(steps):
        opt.step()
    wait(params)
    return (time.perf_counter() - started) / steps * 1e3


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--optimizer", choices=sorted(OPTIMIZERS), default="adamw")
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    forms = [(device, form) for device in ("cpu", "neuron") for form in FORMS[args.optimizer]]
    params = {device: parameters(device) for device in ("cpu", "neuron")}
    times: Dict[tuple, List[float]] = {form: [] for form in forms}
    for _ in range(args.rounds):
        for device, form in forms:
            opt = OPTIMIZERS[args.optimizer](params[device], form)
            times[(device, form)].append(step_ms(opt, params[device], args.steps))
    print(f"{args.optimizer} step of {len(params['cpu'])} tensors, "
          f"{sum(p.numel() for p in params['cpu'])} values, torch {torch.__version__}, "
          f"{torch.get_num_threads()} threads")
    print(f"{'form':<24} {'ms per step, median [min, max]':>32}")
    for device, form in forms:
        t = times[(device, form)]
        name = f"{device} {form}"
        print(f"{name:<24} {statistics.median(t):>14.1f} [{min(t):7.1f}, {max(t):7.1f}]")


if __name__ == "__main__":
    main()
