# SPDX-License-Identifier: MIT
"""The operators on ISA 1.2's RANDOM and DMA_SCATTER_ADD and ISA 1.1's
DMA_GATHER: the device's dropout (neuron::philox_dropout, the compiler's
dropout and dropout_mask), embedding's backward (neuron::embedding_backward,
the compiler's index_add into zeros), index_add along dim 0 with int32 ids,
and embedding's forward and index_select along dim 0 (neuron::embedding,
neuron::index_select, and aten's with int32 ids: the compiler's
index_select)."""

from __future__ import annotations

import torch

from ... import philox  # noqa: F401 (defines the neuron:: operators lowered here)
from ..context import Context
from ..values import Tensor
from ..registry import FLOATS, lowering

aten = torch.ops.aten
_SCATTERED = frozenset({torch.float32, torch.bfloat16, torch.int32})
_GATHERED = frozenset({torch.float32, torch.bfloat16, torch.float16, torch.int32})
# where() moves ids through fp32 (hw/isa.md SELECT): exact up to 2^24, so
# a table of more rows could read a wrong row for an id beyond it.
MAX_GATHER_ROWS = 1 << 24


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


def _gathered(L: Context, table: Tensor, ids: Tensor) -> Tensor:
    """Rows @p ids (int32 [N, 1], or [N, 2]: the (low, high) words of int64
    ids) of @p table [V, D]: [N, D]. An int64 id is its low word where its
    high word is 0; else (a negative id, or one of 2^32 or more) -1, so
    that DMA_GATHER faults the job, as it does for a low word outside
    [0, V), rather than read another row."""
    if len(table.shape) != 2:
        raise L.unsupported(f"a {len(table.shape)}-d table (the device gathers rows of [V, D]; "
                            "view the table as one first)")
    rows = table.shape[0]
    if rows > MAX_GATHER_ROWS:
        raise L.unsupported(f"a table of {rows} rows (the device's ids pass through fp32 where "
                            f"they are checked: at most {MAX_GATHER_ROWS} rows)")
    if len(ids.shape) != 2 or ids.shape[1] not in (1, 2):
        raise L.unsupported(f"ids {list(ids.shape)} (int32 [N, 1] or the words of int64 ids "
                            "[N, 2])")
    n = ids.shape[0]
    if ids.shape[1] == 2:
        low, high = L.split(ids, 1, [1, 1])
        whole = L.emit("eq", [high, 0.0], result=False, shape=(n, 1), dtype=torch.bool)
        ids = L.emit("where", [whole, low, -1.0], result=False, shape=(n, 1), dtype=torch.int32)
    return L.emit("index_select", [table, ids], result=False, shape=(n, table.shape[1]))


def _reshaped(L: Context, x: Tensor) -> Tensor:
    """@p x as the node's result shape."""
    out = tuple(L.out_shape())
    return x if tuple(x.shape) == out else L.emit("reshape", [x], dims=list(out))


def _column(L: Context, ids: Tensor) -> Tensor:
    """int32 @p ids of any shape as a column [N, 1]."""
    n = 1
    for s in ids.shape:
        n *= s
    if tuple(ids.shape) == (n, 1):
        return ids
    return L.emit("reshape", [ids], result=False, shape=(n, 1), dims=[n, 1])


@lowering(torch.ops.neuron.embedding.default, torch.ops.neuron.index_select.default,
          dtypes=_GATHERED)
def gather_rows(L: Context, node: torch.fx.Node) -> None:
    # (table [V, D], ids int32 [N, 1] or [N, 2]) -> [N, D]
    table = L.tensor(L.arg(0), "table")
    ids = L.tensor(L.arg(1, "ids"), "ids")
    if ids.dtype != torch.int32:
        raise L.unsupported(f"{ids.dtype} ids (int32 [N, 1], or the words of int64 ids [N, 2])")
    L.bind(_gathered(L, table, ids))


@lowering(aten.index_select.default, dtypes=_GATHERED)
def index_select(L: Context, node: torch.fx.Node) -> None:
    # (self [V, D], dim, index [N]) along dim 0 with int32 ids
    x = L.tensor(L.arg(0, "self"), "self")
    dim = int(L.arg(1, "dim"))
    index = L.tensor(L.arg(2, "index"), "index")
    if dim not in (0, -len(x.shape)):
        raise L.unsupported(f"dim={dim} of a {len(x.shape)}-d tensor (the device gathers rows "
                            "along dim 0)")
    if index.dtype != torch.int32:
        raise L.unsupported(f"{index.dtype} ids (the device takes int32 ids)")
    L.bind(_reshaped(L, _gathered(L, x, _column(L, index))))


@lowering(aten.embedding.default, dtypes=_GATHERED)
def embedding(L: Context, node: torch.fx.Node) -> None:
    # (weight [V, D], indices, padding_idx, scale_grad_by_freq, sparse) with
    # int32 ids; the last three change only the backward
    weight = L.tensor(L.arg(0, "weight"), "weight")
    indices = L.tensor(L.arg(1, "indices"), "indices")
    if indices.dtype != torch.int32:
        raise L.unsupported(f"{indices.dtype} ids (the device takes int32 ids)")
    L.bind(_reshaped(L, _gathered(L, weight, _column(L, indices))))
