# SPDX-License-Identifier: MIT
"""Loads the op library that registers torch.classes.neuron.Model and
torch.ops.neuron.* (it must be loaded before a saved model is loaded)."""

import os
from pathlib import Path

import torch

LIBRARY_NAME = "libneuron_torch.so"


def library_path() -> Path:
    """$NEURON_TORCH_LIBRARY, else the library next to this package."""
    env = os.environ.get("NEURON_TORCH_LIBRARY")
    if env:
        return Path(env)
    return Path(__file__).resolve().parent / LIBRARY_NAME


def load() -> None:
    path = library_path()
    if not path.is_file():
        raise ImportError(
            f"torch_neuronx: the op library {path} is missing: build the project "
            "(cmake --build) and import the package from the build tree "
            "(PYTHONPATH=<build>/python), or set NEURON_TORCH_LIBRARY")
    torch.ops.load_library(str(path))
