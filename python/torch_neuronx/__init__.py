# SPDX-License-Identifier: MIT
"""PyTorch on neuron devices: the `neuron` device (tensors and modules
moved to "neuron" run there, eagerly), torch.compile(backend="neuron")
(torch_neuronx.dynamo), and torch_neuronx.trace, which
compiles a model for the device and returns a TorchScript module that runs
it there (docs/torch.md). Importing the package loads the op library and
registers the device; importing torch does it too (the `torch.backends`
entry point)."""


def _autoload() -> None:
    """The `torch.backends` entry point. Loading it imported this package,
    which registers the device. Defined before anything imports torch:
    `import torch_neuronx` before `import torch` makes torch load the entry
    point while this module is still initialising."""


from . import _library  # noqa: E402

_library.load()

from . import backend  # noqa: E402

backend.register()

from . import dynamo  # noqa: E402

dynamo.register()

from . import rng  # noqa: E402, F401 (the device's dropout and embedding backward)
from . import losses  # noqa: E402, F401 (nll_loss on the device)
from . import casts  # noqa: E402, F401 (conversions between neuron tensors on the device)
from . import strided  # noqa: E402, F401 (copies of strided views on the device)
from .eager import backend_ops  # noqa: E402, F401 (convolution, LSTM and GRU cells)
from .eager import foreach  # noqa: E402, F401 (the optimizers' multi-tensor updates)
from .eager import fused_optim  # noqa: E402, F401 (the fused optimizers)

from . import distributed  # noqa: E402

distributed.register()

from ._version import __version__  # noqa: E402
from .analyze import analyze  # noqa: E402
from .data_parallel import DataParallel  # noqa: E402
from .dynamo import get_compiled_programs  # noqa: E402
from .eager import get_device_ops, get_fallback_ops  # noqa: E402
from .lowering import SUPPORTED_OPERATORS, UnsupportedOperatorError  # noqa: E402
from .partition import PartitionerConfig, PartitionWarning  # noqa: E402
from .trace import trace  # noqa: E402

__all__ = ["trace", "analyze", "DataParallel", "PartitionerConfig", "PartitionWarning",
           "UnsupportedOperatorError", "SUPPORTED_OPERATORS", "get_device_ops", "get_fallback_ops",
           "get_compiled_programs",
           "__version__"]
