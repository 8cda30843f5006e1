# SPDX-License-Identifier: MIT
"""``neuron::cast(x, dtype)``: @p x converted to @p dtype (the IR's cast:
round to nearest-even between floating dtypes), a PyTorch operator whose
device kernel the runtime's copy runs for ``copy_`` between neuron tensors
of float32 and bfloat16 (``x.to(torch.bfloat16)``, autocast's casts), so
that such a conversion is a kernel in the stream's order rather than a
round trip through the host that waits for the device
(python/csrc/runtime/copy.cpp). Lowered in lowering/ops/movement.py."""

from __future__ import annotations

import torch

_library = torch.library.Library("neuron", "FRAGMENT")  # noqa: TOR901
_library.define("cast(Tensor self, ScalarType dtype) -> Tensor")


def _cast_cpu(x: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    return x.to(dtype)


def _cast_meta(x: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    return torch.empty_like(x, dtype=dtype)


_library.impl("cast", _cast_cpu, "CPU")
_library.impl("cast", _cast_meta, "Meta")
