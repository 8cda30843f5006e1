# SPDX-License-Identifier: MIT
# A torch-neuronx script as users write it: trace a module for the neuron
# device and save it (docs/torch.md). The document it comes from writes
# torch.GELU(), which torch does not have: torch.nn.GELU() here. The last
# lines run it and compare with torch on the CPU.
import torch
import torch_neuronx

class SimpleLLMBlock(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = torch.nn.Linear(768, 768)
        self.gelu = torch.nn.GELU()
    def forward(self, x):
        return self.gelu(self.linear(x))

model = SimpleLLMBlock().eval()
example_input = torch.randn(1, 128, 768)
model_neuron = torch_neuronx.trace(model, example_input)
torch.jit.save(model_neuron, "model_neuron.pt")

with torch.no_grad():
    cpu = model(example_input)
neuron = model_neuron(example_input)
print(f"SimpleLLMBlock on {model_neuron.model.placement()}: max |neuron - cpu| = "
      f"{(neuron - cpu).abs().max().item():.3g}, max |cpu| = {cpu.abs().max().item():.3g}")
