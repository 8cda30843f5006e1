# SPDX-License-Identifier: MIT
"""The device's operators on ISA 1.2's RANDOM and DMA_SCATTER_ADD and ISA
1.1's DMA_GATHER, as PyTorch operators (lowered in
lowering/ops/sampling.py), with CPU kernels that give the device's bits:
``neuron::philox_dropout(x, key, p)``, the dropout of x and its keep mask
from the Philox-4x32-10 stream of the int32[4] key (seed lo, seed hi,
offset lo, offset hi; hw/isa.md, RANDOM);
``neuron::embedding_backward(grad, ids, num_weights)``, the rows of grad
[N, D] added into zeros [num_weights, D] at their int32 ids [N, 1]; and
``neuron::embedding(weight, ids)`` and ``neuron::index_select(self, ids)``,
the rows of a table [V, D] at ids [N, 1] (int32 ids) or [N, 2] (int64 ids
as their little-endian (low, high) int32 words, the storage of an int64
tensor viewed as int32): [N, D]. An id outside [0, V) is an IndexError on
the CPU; on the device it faults the job (the operator's name in the
error at the next synchronization). Two names for one computation, so
that the error names the operator the user called."""

from __future__ import annotations

from typing import Tuple

import torch

_M0, _M1 = 0xD2511F53, 0xCD9E8D57
_W0, _W1 = 0x9E3779B9, 0xBB67AE85
_ROUNDS = 10
_MASK32 = 0xFFFFFFFF

_library = torch.library.Library("neuron", "FRAGMENT")  # noqa: TOR901
_library.define("philox_dropout(Tensor self, Tensor key, float p) -> (Tensor, Tensor)")
_library.define("embedding_backward(Tensor grad, Tensor ids, int num_weights) -> Tensor")
_library.define("embedding(Tensor weight, Tensor ids) -> Tensor")
_library.define("index_select(Tensor self, Tensor ids) -> Tensor")


# --- Philox-4x32-10 on the CPU, bit for bit as the device ---------------------

def _mulhilo(x: torch.Tensor, m: int) -> Tuple[torch.Tensor, torch.Tensor]:
    """The high and low 32 bits of x * m (x int64 in [0, 2^32)), in 16-bit
    pieces so that no partial product leaves int64."""
    xh, xl = x >> 16, x & 0xFFFF
    mh, ml = m >> 16, m & 0xFFFF
    mid = xh * ml + xl * mh  # < 2^33
    low = xl * ml + ((mid & 0xFFFF) << 16)  # < 2^33
    hi = xh * mh + (mid >> 16) + (low >> 32)
    return hi & _MASK32, low & _MASK32


def philox4x32(ctr: Tuple[torch.Tensor, ...], key: Tuple[int, int],
               rounds: int = _ROUNDS) -> Tuple[torch.Tensor, ...]:
    """Philox-4x32 of the counters @p ctr (four int64 tensors of 32-bit
    values) under @p key: the four output words (neuron_philox4x32())."""
    x0, x1, x2, x3 = ctr
    k0, k1 = key
    for _ in range(rounds):
        hi0, lo0 = _mulhilo(x0, _M0)
        hi1, lo1 = _mulhilo(x2, _M1)
        x0, x1, x2, x3 = hi1 ^ x1 ^ k0, lo1, hi0 ^ x3 ^ k1, lo0
        k0, k1 = (k0 + _W0) & _MASK32, (k1 + _W1) & _MASK32
    return x0, x1, x2, x3


def _words(key: torch.Tensor, n: int) -> torch.Tensor:
    """Stream words 0 .. n-1 of the int32[4] @p key (hw/isa.md RANDOM):
    word i is word i % 4 of Philox of the counter (i / 4, offset)."""
    w = [int(v) & _MASK32 for v in key.reshape(-1).tolist()]
    q = torch.arange((n + 3) // 4, dtype=torch.int64)
    zeros = torch.zeros_like(q)
    out = philox4x32((q & _MASK32, q >> 32, zeros + w[2], zeros + w[3]), (w[0], w[1]))
    return torch.stack(out, dim=1).reshape(-1)[:n]


def _keep(key: torch.Tensor, numel: int, p: float) -> torch.Tensor:
    """The keep mask: the uniform (word >> 8) * 2^-24 at least p (fp32)."""
    u = (_words(key, numel) >> 8).to(torch.float32) * 2.0 ** -24
    return u >= torch.tensor(p, dtype=torch.float32)


def _scale(p: float) -> torch.Tensor:
    """1 / (1 - p) in fp32, as the device computes it."""
    one = torch.tensor(1.0, dtype=torch.float32)
    return one / (one - torch.tensor(p, dtype=torch.float32))


def _philox_dropout_cpu(x: torch.Tensor, key: torch.Tensor,
                        p: float) -> Tuple[torch.Tensor, torch.Tensor]:
    keep = _keep(key, x.numel(), p).reshape(x.shape)
    y = (x.to(torch.float32) * (keep.to(torch.float32) * _scale(p))).to(x.dtype)
    return y, keep


def _philox_dropout_meta(x: torch.Tensor, key: torch.Tensor,
                         p: float) -> Tuple[torch.Tensor, torch.Tensor]:
    return torch.empty_like(x), torch.empty_like(x, dtype=torch.bool)


def _embedding_backward_cpu(grad: torch.Tensor, ids: torch.Tensor,
                            num_weights: int) -> torch.Tensor:
    out = torch.zeros(num_weights, grad.shape[-1], dtype=torch.float32)
    out.index_add_(0, ids.reshape(-1).to(torch.int64), grad.to(torch.float32))
    return out.to(grad.dtype)


def _embedding_backward_meta(grad: torch.Tensor, ids: torch.Tensor,
                             num_weights: int) -> torch.Tensor:
    return grad.new_empty((num_weights, grad.shape[-1]))


def row_ids(ids: torch.Tensor) -> torch.Tensor:
    """The int64 row ids [N] of @p ids: int32 [N, 1], or [N, 2] of the
    (low, high) words of int64 ids."""
    if ids.dim() != 2 or ids.dtype != torch.int32 or ids.shape[1] not in (1, 2):
        raise ValueError(f"row ids are int32 [N, 1] or [N, 2] (the words of int64 ids), not "
                         f"{ids.dtype} {list(ids.shape)}")
    if ids.shape[1] == 1:
        return ids.reshape(-1).to(torch.int64)
    words = ids.to(torch.int64)
    return (words[:, 0] & _MASK32) | (words[:, 1] << 32)


def _gather_rows_cpu(table: torch.Tensor, ids: torch.Tensor) -> torch.Tensor:
    return table.index_select(0, row_ids(ids))


def _gather_rows_meta(table: torch.Tensor, ids: torch.Tensor) -> torch.Tensor:
    return table.new_empty((ids.shape[0],) + tuple(table.shape[1:]))


# The operators whose int32 operands (the key, the ids) an eager kernel
# takes as they are.
INT32_OPERANDS = frozenset({torch.ops.neuron.philox_dropout.default,
                            torch.ops.neuron.embedding_backward.default,
                            torch.ops.neuron.embedding.default,
                            torch.ops.neuron.index_select.default,
                            torch.ops.aten.index_add.default})

# aten operators lowered for graphs (lowering/ops/sampling.py) whose eager
# kernel on the device is one of their own (rng.py: int64 ids), which the
# eager dispatch must not claim for the generic path.
OWN_EAGER_KERNELS = frozenset({torch.ops.aten.embedding.default,
                               torch.ops.aten.index_select.default})

_library.impl("philox_dropout", _philox_dropout_cpu, "CPU")
_library.impl("philox_dropout", _philox_dropout_meta, "Meta")
_library.impl("embedding_backward", _embedding_backward_cpu, "CPU")
_library.impl("embedding_backward", _embedding_backward_meta, "Meta")
for _name in ("embedding", "index_select"):
    _library.impl(_name, _gather_rows_cpu, "CPU")
    _library.impl(_name, _gather_rows_meta, "Meta")


