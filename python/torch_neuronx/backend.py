# SPDX-License-Identifier: MIT
"""Registers the `neuron` device with PyTorch, the way out-of-tree backends
do (PrivateUse1 renamed, a device module, the generated tensor and module
methods, the eager dispatch). Importing torch_neuronx does it; so does
importing torch, through the `torch.backends` entry point, unless
TORCH_DEVICE_BACKEND_AUTOLOAD=0. Opening the device waits for its first use."""

from __future__ import annotations

import torch

from . import device as device_module
from . import eager

_registered = False


def register() -> None:
    global _registered
    if _registered:
        return
    torch.utils.rename_privateuse1_backend("neuron")
    torch._register_device_module("neuron", device_module)
    torch.utils.generate_methods_for_privateuse1_backend(for_tensor=True, for_module=True,
                                                        for_packed_sequence=True,
                                                        for_storage=True)
    eager.install()
    _registered = True
