# SPDX-License-Identifier: MIT
"""The table of lowerings: one record per ATen operator overload, declared
where the operator is lowered with @lowering(aten.<op>.<overload>, ...).
Adding an operator to the device is one function in one file of ops/
(docs/torch.md, "Adding an operator")."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Dict, FrozenSet, Tuple

import torch

# (context.Context, the node): the registry does not import the context,
# which consults it.
LowerFn = Callable[[Any, torch.fx.Node], None]

# The dtypes the device computes in, by their IR names.
IR_DTYPES: Dict[torch.dtype, str] = {
    torch.float32: "fp32",
    torch.bfloat16: "bf16",
    torch.float16: "fp16",
    torch.int32: "int32",
}
# The IR's dtype of each torch dtype a cast may produce: bool is the u8
# of comparisons' masks (0 or 1).
CAST_DTYPES: Dict[torch.dtype, str] = {**IR_DTYPES, torch.bool: "u8"}


@dataclass(frozen=True)
class Lowering:
    """How the device runs one ATen operator overload.

    fn: builds the IR of the node (Context.emit), or binds its result to a
    value it already has; it raises Context.unsupported(reason) for a form
    it does not lower. dtypes: the operand dtypes it takes (the compiler
    infers and checks the result's shape, and the context compares it with
    the traced one). The operator's name in reports is its ATen name."""
    target: torch._ops.OpOverload
    fn: LowerFn
    dtypes: FrozenSet[torch.dtype]

    @property
    def name(self) -> str:
        return operator_name(self.target)


FLOATS = frozenset({torch.float32, torch.bfloat16, torch.float16})
# The vector engine's add, sub and mul are exact on int32 below 2^24, and
# data movement copies any dtype (hw/isa.md).
FLOATS_AND_INT32 = FLOATS | {torch.int32}

LOWERINGS: Dict[torch._ops.OpOverload, Lowering] = {}


def lowering(*targets: torch._ops.OpOverload,
             dtypes: FrozenSet[torch.dtype] = FLOATS) -> Callable[[LowerFn], LowerFn]:
    """Registers the decorated function as the lowering of @p targets."""
    def register(fn: LowerFn) -> LowerFn:
        for t in targets:
            if t in LOWERINGS:
                raise RuntimeError(f"torch_neuronx: two lowerings of {t}: "
                                   f"{LOWERINGS[t].fn.__module__} and {fn.__module__}")
            LOWERINGS[t] = Lowering(t, fn, frozenset(dtypes))
        return fn
    return register


def operator_name(target: object) -> str:
    """"aten::add" for aten.add.Tensor: the name torch-neuronx's reports and
    PartitionerConfig.ops_to_partition use."""
    if isinstance(target, torch._ops.OpOverload):
        return target.name().split(".")[0]
    return getattr(target, "__name__", str(target))


def supported_operators() -> Tuple[str, ...]:
    return tuple(sorted({r.name for r in LOWERINGS.values()}))
