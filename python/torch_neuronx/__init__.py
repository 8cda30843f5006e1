# SPDX-License-Identifier: MIT
"""PyTorch on neuron devices: torch_neuronx.trace compiles a model for the
device and returns a TorchScript module that runs it there (docs/torch.md).
Importing the package loads the op library that saved models need."""

from . import _library

_library.load()

from ._version import __version__  # noqa: E402
from .analyze import analyze  # noqa: E402
from .data_parallel import DataParallel  # noqa: E402
from .lowering import SUPPORTED_OPERATORS, UnsupportedOperatorError  # noqa: E402
from .partition import PartitionerConfig, PartitionWarning  # noqa: E402
from .trace import trace  # noqa: E402

__all__ = ["trace", "analyze", "DataParallel", "PartitionerConfig", "PartitionWarning",
           "UnsupportedOperatorError", "SUPPORTED_OPERATORS", "__version__"]
