# SPDX-License-Identifier: MIT
"""Eager execution on the `neuron` device: every ATen operator that reaches
the device's dispatch key without a kernel of its own (python/csrc/runtime
has creation, views, copies and fills) goes through dispatch.py: compiled
for the device once per signature through the FX lowering (kernels.py), or
run on the CPU (fallback.py)."""

from .dispatch import install
from .fallback import get_fallback_ops
from .kernels import get_device_ops

__all__ = ["install", "get_device_ops", "get_fallback_ops"]
