# SPDX-License-Identifier: MIT
"""The error of an operator the device does not run."""

from __future__ import annotations

from typing import Optional


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
