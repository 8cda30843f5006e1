# SPDX-License-Identifier: MIT
"""The error of an operator the device does not run."""

from __future__ import annotations

from typing import List, Optional


class UnsupportedOperatorError(RuntimeError):
    """An operator (or a form of it) the neuron compiler does not lower."""

    def __init__(self, kind: str, site: str, reason: str) -> None:
        self.kind = kind
        self.site = site
        self.reason = reason
        self.node_name: Optional[str] = None  # the FX node's, when known
        super().__init__(
            f"torch_neuronx.trace: {kind} is not supported on the neuron device"
            f"{': ' + reason if reason else ''} (called at {site}). To run the "
            "operators the device does not support on the CPU and the rest on the "
            "device, partition the graph: torch_neuronx.trace(..., "
            "partitioner_config=torch_neuronx.PartitionerConfig()); "
            "torch_neuronx.analyze(model, example_inputs) lists them all")


class UnsupportedInputError(UnsupportedOperatorError):
    """An input of the user's the device cannot take (its dtype, its rank):
    named as the user passed it, never as a graph placeholder."""

    def __init__(self, name: str, model: str, dtype: object, shape: List[int],
                 reason: str) -> None:
        RuntimeError.__init__(
            self, f"torch_neuronx.trace: input '{name}' of {model} is a {dtype} tensor of "
            f"shape {shape}, which the neuron device cannot take"
            f"{': ' + reason if reason else ''}")
        self.kind = f"input '{name}'"
        self.site = model
        self.reason = reason
        self.node_name = None
