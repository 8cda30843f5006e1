# SPDX-License-Identifier: MIT
"""The lowerings of the ATen operators, a module per family; importing
this package registers them all."""

from . import (activations, attention, compare, elementwise, functions, matmul,  # noqa: F401
               movement, normalization, reductions, sampling, strided)
