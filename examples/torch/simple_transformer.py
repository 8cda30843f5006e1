# SPDX-License-Identifier: MIT
# A torch-neuronx script as users write it: trace a module for the neuron
# device and save it (docs/torch.md). The last lines run it and compare
# with torch on the CPU.
import torch
import torch_neuronx

class SimpleTransformer(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = torch.nn.Linear(768, 768)
    def forward(self, x):
        return self.linear(x)

model = SimpleTransformer().eval()
example_input = torch.rand(1, 768)
model_neuron = torch_neuronx.trace(model, example_input)
torch.jit.save(model_neuron, "model_neuron.pt")

with torch.no_grad():
    cpu = model(example_input)
neuron = model_neuron(example_input)
print(f"SimpleTransformer on {model_neuron.model.placement()}: max |neuron - cpu| = "
      f"{(neuron - cpu).abs().max().item():.3g}, max |cpu| = {cpu.abs().max().item():.3g}")
