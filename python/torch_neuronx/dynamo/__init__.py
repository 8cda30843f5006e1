# SPDX-License-Identifier: MIT
"""torch.compile(model, backend="neuron"): Dynamo's graphs through
AOTAutograd, each forward and backward graph compiled into as few device
programs as the lowering allows, the operators it does not take run
eagerly on the device (docs/torch.md, "torch.compile")."""

from .backend import neuron, register
from .programs import get_compiled_programs, statistics

__all__ = ["neuron", "register", "get_compiled_programs", "statistics"]
