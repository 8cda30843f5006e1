# SPDX-License-Identifier: MIT
"""The lowerings of the ATen operators, a module per family; importing
this package registers them all."""

from . import (attention, compare, elementwise, matmul, movement, normalization,  # noqa: F401
               reductions)
