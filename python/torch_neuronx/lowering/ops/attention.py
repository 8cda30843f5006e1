# SPDX-License-Identifier: MIT
"""Attention: scaled dot-product attention (one attention node of the IR)
and the masking operators that make scores causal (masked_fill, where)."""

from __future__ import annotations

import math
from typing import Any, List, Optional

import torch

from ..context import Context, dtype_of
from ..registry import lowering
from ..values import Expanded, External, Masked, Tensor, Weight
from .compare import general_where, is_device_mask
from .masks import (MASK_HINT, additive_causal, additive_from_bool, causal_keep,
                    check_mask_shape, fill_value, is_bool_input, require_causal_fill, shape_of)

aten = torch.ops.aten


@lowering(aten.masked_fill.Scalar, aten.masked_fill.Tensor)
def masked_fill(L: Context, node: torch.fx.Node) -> None:
    x, mask, fill = L.arg(0), L.arg(1), L.arg(2)
    if is_device_mask(L, mask):
        general_where(L, mask, fill, x)  # the fill where the mask holds
        return
    if is_bool_input(mask):
        additive_from_bool(L, x, mask, fill)
        return
    x = L.tensor(x, "self")
    if not isinstance(mask, Weight):
        raise L.unsupported(f"a mask computed from the inputs ({MASK_HINT})")
    if mask.value.dtype != torch.bool or not causal_keep(x.shape, ~mask.value):
        raise L.unsupported(f"a mask other than the causal one ({MASK_HINT})")
    require_causal_fill(L, fill_value(fill), fill)
    L.bind(Masked(x))


@lowering(aten.where.self)
def where(L: Context, node: torch.fx.Node) -> None:
    cond, kept, fill = L.arg(0), L.arg(1), L.arg(2)
    if is_device_mask(L, cond):
        general_where(L, cond, kept, fill)  # a mask the device holds
        return
    if isinstance(cond, Weight) and cond.value.dtype == torch.bool \
            and not causal_keep(shape_of(kept) or (), cond.value) \
            and _selects_one_side(L, cond.value, kept, fill):
        return
    if not isinstance(kept, (Tensor, External)):
        raise L.unsupported("a select whose kept value is not a tensor of the device")
    x = L.tensor(kept, "self")
    if not isinstance(cond, Weight) or not causal_keep(x.shape, cond.value):
        raise L.unsupported(f"a condition other than the causal mask ({MASK_HINT})")
    require_causal_fill(L, fill_value(fill), fill)
    L.bind(Masked(x))


def _selects_one_side(L: Context, cond: torch.Tensor, kept: Any, fill: Any) -> bool:
    """where() with a constant condition that holds everywhere or nowhere
    (scaled_dot_product_attention's test for rows with every key masked,
    under a causal mask) is one of its operands, if that is a tensor of
    the result's shape and dtype: binds it."""
    if cond.all():
        chosen = kept
    elif not cond.any():
        chosen = fill
    else:
        return False
    out = L.value(L.node)
    if not isinstance(chosen, (Tensor, External)) or dtype_of(chosen) != out.dtype \
            or shape_of(chosen) != tuple(out.shape):
        return False
    L.bind(chosen)
    return True


def _attention(L: Context, node: torch.fx.Node, mask: Any, dropout_p: float, is_causal: bool,
               scale: Optional[float]) -> None:
    """softmax(q k^T * scale [+ mask]) v as one attention node; a bool mask
    is True where a key takes part. The node's other results (logsumexp,
    the weights) are not lowered."""
    q, k, v = (L.tensor(L.arg(i), n) for i, n in enumerate(("query", "key", "value")))
    if dropout_p:
        raise L.unsupported(f"dropout_p={dropout_p} (trace the model in eval mode)")
    if len(q.shape) < 2 or len(k.shape) != len(q.shape) or q.shape[:-2] != k.shape[:-2]:
        raise L.unsupported("query and key of different batch dimensions")
    if v.shape[:-1] != k.shape[:-1]:
        raise L.unsupported(f"value of shape {list(v.shape)} for key of shape {list(k.shape)} "
                            "(the same batch dimensions and keys)")
    scores = tuple(q.shape[:-1]) + (k.shape[-2],)
    causal = bool(is_causal)
    operands: List[Tensor] = [q, k, v]
    if mask is not None and causal:
        raise L.unsupported("is_causal together with an attn_mask")
    if mask is not None:
        if isinstance(mask, Weight) and mask.value.dtype == torch.bool:
            if not causal_keep(scores, mask.value):
                raise L.unsupported(f"a mask other than the causal one ({MASK_HINT})")
            causal = True
        elif additive_causal(scores, mask):
            causal = True
        else:
            if isinstance(mask, Expanded) and mask.view == mask.shape:
                # broadcast by the node's addition, from what was expanded
                mask = mask.source
            mask_shape = shape_of(mask)
            if mask_shape is not None:
                check_mask_shape(L, mask_shape, scores, "attn_mask")
            operands.append(L.tensor(mask, "attn_mask"))
    factor = scale if scale is not None else 1.0 / math.sqrt(q.shape[-1])
    out_shape = tuple(q.shape[:-1]) + (v.shape[-1],)
    out = L.emit("attention", operands, shape=out_shape, flags=["causal"] if causal else [],
                 scale=float(factor))
    L.bind([out] + [None] * (len(L.value(node)) - 1))


@lowering(aten._scaled_dot_product_flash_attention_for_cpu.default)
def sdpa_flash_for_cpu(L: Context, node: torch.fx.Node) -> None:
    # (query, key, value, dropout_p=0.0, is_causal=False, *, attn_mask=None,
    # scale=None) -> (output, logsumexp): the CPU's kernel of
    # torch.nn.functional.scaled_dot_product_attention
    _attention(L, node, L.arg(None, "attn_mask"), L.arg(3, "dropout_p", 0.0),
               L.arg(4, "is_causal", False), L.arg(None, "scale"))


@lowering(aten._scaled_dot_product_attention_math.default)
def sdpa_math(L: Context, node: torch.fx.Node) -> None:
    # (query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False,
    # dropout_mask=None, *, scale=None, enable_gqa=False) -> (output, weights)
    if L.arg(6, "dropout_mask") is not None:
        raise L.unsupported("a dropout mask")
    if L.arg(None, "enable_gqa", False):
        raise L.unsupported("grouped-query attention (enable_gqa=True)")
    _attention(L, node, L.arg(3, "attn_mask"), L.arg(4, "dropout_p", 0.0),
               L.arg(5, "is_causal", False), L.arg(None, "scale"))
