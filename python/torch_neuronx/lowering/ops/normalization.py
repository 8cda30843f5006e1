# SPDX-License-Identifier: MIT
"""Softmax, log_softmax and layer normalization over the last axis."""

from __future__ import annotations

import torch

from ..context import Context
from ..registry import lowering
from ..values import Masked

aten = torch.ops.aten


def _softmax_of(L: Context, dim: int) -> None:
    given = L.arg(0)
    x = given.scores if isinstance(given, Masked) else L.tensor(given, "self")
    if (dim + len(x.shape) if dim < 0 else dim) != len(x.shape) - 1:
        raise L.unsupported("softmax over an axis other than the last")
    L.bind(L.emit("softmax", [x], axis=-1, flags=["causal"] if isinstance(given, Masked) else []))


@lowering(aten._softmax.default)
def softmax(L: Context, node: torch.fx.Node) -> None:
    # (self, dim, half_to_float)
    if L.arg(2):
        raise L.unsupported("softmax of a half tensor into float (half_to_float)")
    _softmax_of(L, L.arg(1))


@lowering(aten._log_softmax.default)
def log_softmax(L: Context, node: torch.fx.Node) -> None:
    # (self, dim, half_to_float)
    if L.arg(2):
        raise L.unsupported("log_softmax of a half tensor into float (half_to_float)")
    x, dim = L.tensor(L.arg(0), "self"), L.arg(1)
    if (dim + len(x.shape) if dim < 0 else dim) != len(x.shape) - 1:
        raise L.unsupported("log_softmax over an axis other than the last")
    L.bind(L.emit("log_softmax", [x], axis=-1))


@lowering(aten.native_layer_norm.default)
def layer_norm(L: Context, node: torch.fx.Node) -> None:
    # (input, normalized_shape, weight, bias, eps) -> (out, mean, rstd); the
    # mean and rstd (which autograd saves) are not lowered
    x, shape, w, b, eps = (L.tensor(L.arg(0), "input"), L.arg(1), L.arg(2), L.arg(3), L.arg(4))
    if list(shape) != [x.shape[-1]]:
        raise L.unsupported(f"normalized_shape {list(shape)} (only the last axis, "
                            f"[{x.shape[-1]}], is lowered)")
    if (w is None) != (b is None):
        raise L.unsupported("a weight without a bias or a bias without a weight")
    operands = [x]
    if w is not None:
        operands += [L.tensor(w, "weight"), L.tensor(b, "bias")]
    out = L.emit("layer_norm", operands, shape=x.shape, eps=float(eps))
    L.bind([out, None, None])
