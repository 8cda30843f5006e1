# SPDX-License-Identifier: MIT
# A torch_neuronx script that knows nothing of profiling: it traces a small
# MLP for the neuron device, calls it CALLS times and checks each result
# against torch on the CPU. test_profile_torch.py runs it under
# `neuron-profile capture`.
import sys

import torch
import torch_neuronx

CALLS = 3


class TinyMLP(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc1 = torch.nn.Linear(64, 128)
        self.act = torch.nn.GELU()
        self.fc2 = torch.nn.Linear(128, 32)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.softmax(self.fc2(self.act(self.fc1(x))), dim=-1)


def main() -> int:
    torch.manual_seed(0)
    model = TinyMLP().eval()
    x = torch.randn(4, 64)
    traced = torch_neuronx.trace(model, x)
    for k in range(CALLS):
        xk = x + k
        with torch.no_grad():
            cpu = model(xk)
        dev = traced(xk)
        err = (dev - cpu).abs().max().item()
        print(f"call {k + 1}: max |neuron - cpu| = {err:.3g}")
        if err > 1e-4:
            return 1
    print(f"calls: {CALLS}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
