# SPDX-License-Identifier: MIT
"""torch.distributed on neuron devices: the `neuron` process-group backend
(docs/distributed.md), registered with torch.distributed when the device
is (importing torch loads it), so that `init_process_group("neuron")`,
`init_process_group(device_id=torch.device("neuron", i))` and device
meshes of "neuron" find it. One rank per NeuronCore: LOCAL_RANK selects
the core."""

from __future__ import annotations

import torch.distributed as dist

from .backend import NAME, ProcessGroupNeuron, rank_device

__all__ = ["ProcessGroupNeuron", "rank_device", "register"]

_registered = False


def register() -> None:
    global _registered
    if _registered or not dist.is_available():
        return
    from . import backend
    dist.Backend.register_backend(NAME, backend.create, extended_api=True, devices=["neuron"])
    _registered = True
