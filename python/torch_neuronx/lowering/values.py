# SPDX-License-Identifier: MIT
"""What an FX node stands for while its graph is lowered: a value of the IR
graph, a constant, a tensor from outside the part being lowered, or a form
that only the operators using it lower (a causally masked score, a
broadcast, a transpose)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Tuple, Union

import torch


@dataclass(frozen=True)
class Tensor:
    """A value of the IR graph: its node index in the graph being built,
    its name there, and the shape and torch dtype it has (a bool input is
    fp32 0 and 1 in the IR, see BOOL_INPUT_DTYPE)."""
    node: int
    name: str
    shape: Tuple[int, ...]
    dtype: torch.dtype


@dataclass
class Weight:
    """A tensor known when the model is traced: a parameter (a program
    input of the IR, bound to its value when compiled), a buffer or a
    constant of the graph, or a value folded from those. @p parameter:
    it is a parameter of the module (never folded into another constant,
    so that the lowering keeps weights as inputs)."""
    value: torch.Tensor
    hint: str
    parameter: bool = False
    lowered: Optional[Tensor] = None


@dataclass
class External:
    """A tensor computed outside the part of the graph being lowered (a
    graph input of a partitioned graph, or a CPU operator's result): an
    input of the IR graph from its first use on."""
    name: str
    value: torch.Tensor  # its value in the example run
    source: torch.fx.Node  # the node computing it
    index: Optional[int] = None  # which of the node's results, if several
    lowered: Optional[Tensor] = None


@dataclass(frozen=True)
class Masked:
    """Attention scores under a causal mask known when the model was
    traced: -inf (or a fill that softmax turns into 0) where key k > query
    q on the last two axes. Only softmax takes them, lowered to the
    compiler's softmax(causal), which builds the mask on the device."""
    scores: Tensor


@dataclass(frozen=True)
class Expanded:
    """A tensor broadcast by aten.expand and not materialised: @p source
    broadcast to @p shape, seen as @p view (@p shape, or @p shape with its
    leading axes merged by a reshape, as nn.MultiheadAttention does with a
    key padding mask expanded over the heads). Binary operators and
    baddbmm's mask take it; the device broadcasts it there."""
    source: Tensor
    shape: Tuple[int, ...]
    view: Tuple[int, ...]


@dataclass(frozen=True)
class Transposed:
    """@p source with its last two axes swapped and not materialised: the
    matrix products take it as their transpose_a/transpose_b operand
    (nn.Linear's weight reaches addmm as aten.t of it)."""
    source: Tensor

    @property
    def shape(self) -> Tuple[int, ...]:
        s = self.source.shape
        return s[:-2] + (s[-1], s[-2])


Value = Union[Tensor, Weight, External, Masked, Expanded, Transposed]
