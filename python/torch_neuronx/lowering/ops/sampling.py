# SPDX-License-Identifier: MIT
"""The operators on ISA 1.2's RANDOM and DMA_SCATTER_ADD: the device's
dropout (neuron::philox_dropout, the compiler's dropout and dropout_mask),
embedding's backward (neuron::embedding_backward, the compiler's index_add
into zeros) and index_add along dim 0 with int32 ids."""

from __future__ import annotations

import torch

from ... import philox  # noqa: F401 (defines the neuron:: operators lowered here)
from ..context import Context
from ..registry import FLOATS, lowering

aten = torch.ops.aten
_SCATTERED = frozenset({torch.float32, torch.bfloat16, torch.int32})


@lowering(torch.ops.neuron.philox_dropout.default, dtypes=FLOATS | {torch.int32})
def philox_dropout(L: Context, node: torch.fx.Node) -> None:
    # (self, key, p) -> (x * keep / (1 - p), keep): RANDOM's words of the
    # int32[4] key, the mask the same words as the output's
    x = L.tensor(L.arg(0, "self"), "self")
    key = L.tensor(L.arg(1, "key"), "key")
    p = float(L.arg(2, "p"))
    y = L.emit("dropout", [x, key], shape=x.shape, dtype=x.dtype, p=p)
    m = L.emit("dropout_mask", [x, key], shape=x.shape, dtype=torch.bool, p=p)
    L.bind((y, m))


@lowering(torch.ops.neuron.embedding_backward.default, dtypes=_SCATTERED)
def embedding_backward(L: Context, node: torch.fx.Node) -> None:
    # (grad [N, D], ids int32 [N, 1], num_weights): the rows of grad added
    # into zeros [num_weights, D] at their ids, in row order
    g = L.tensor(L.arg(0, "grad"), "grad")
    ids = L.tensor(L.arg(1, "ids"), "ids")
    rows = int(L.arg(2, "num_weights"))
    L.bind(L.emit("index_add", [ids, g], shape=(rows, g.shape[-1]), dtype=g.dtype, dims=[rows]))


@lowering(aten.index_add.default, dtypes=_SCATTERED)
def index_add(L: Context, node: torch.fx.Node) -> None:
    # (self, dim, index, source, alpha=1) along dim 0 with int32 ids
    base = L.tensor(L.arg(0, "self"), "self")
    dim = int(L.arg(1, "dim"))
    index = L.tensor(L.arg(2, "index"), "index")
    src = L.tensor(L.arg(3, "source"), "source")
    alpha = L.arg(4, "alpha", 1)
    if dim not in (0, -len(base.shape)) or len(base.shape) < 2:
        raise L.unsupported(f"dim={dim} of a {len(base.shape)}-d tensor (the device adds rows "
                            "along dim 0 of a 2-d or larger tensor)")
    if index.dtype != torch.int32:
        raise L.unsupported(f"{index.dtype} ids (the device takes int32 ids)")
    if alpha != 1:
        src = L.emit("mul", [src, float(alpha)], shape=src.shape)
    col = L.emit("reshape", [index], shape=(index.shape[0], 1), dims=[index.shape[0], 1],
                 dtype=torch.int32)
    L.bind(L.emit("index_add", [base, col, src], dtype=base.dtype))
