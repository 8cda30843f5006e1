# SPDX-License-Identifier: MIT
"""The lowerings of the ATen operators, a module per family; importing
this package registers them all."""

from . import attention, elementwise, matmul, movement, normalization, reductions  # noqa: F401
