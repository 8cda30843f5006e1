# SPDX-License-Identifier: MIT
"""The `_foreach` operators (the optimizers' updates over lists of tensors)
as their operator on each tensor, which PyTorch's core ATen
decompositions keep: in a graph (torch.compile) and in an eager call
(eager/foreach.py), each tensor's update is then an operator the lowering
takes, and the update of all of them can be one device program instead of
a job per tensor and operator."""

from __future__ import annotations

from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import torch

PREFIX = "_foreach_"


def _signature(base: Any) -> Tuple[int, List[str]]:
    """How many arguments every overload of @p base takes by position, and
    the keyword-only ones of those that take no more (addcmul: 3,
    ["value"]): a `_foreach` form takes them all by position."""
    schemas = [getattr(base, o)._schema for o in base.overloads()]
    positional = min(sum(1 for a in s.arguments if not a.kwarg_only) for s in schemas)
    keywords: List[str] = []
    for s in schemas:
        if sum(1 for a in s.arguments if not a.kwarg_only) == positional:
            names = [a.name for a in s.arguments if a.kwarg_only and a.name != "out"]
            keywords = names if len(names) > len(keywords) else keywords
    return positional, keywords


def per_tensor_arguments(base: Any, args: Sequence[Any], kwargs: Dict[str, Any]
                         ) -> Optional[List[Tuple[Tuple[Any, ...], Dict[str, Any]]]]:
    """The arguments of @p base for each tensor of a functional `_foreach`
    call of it: the lists among the call's arguments (of tensors or of
    numbers) zipped, the other arguments the same for every tensor; its
    arguments past the ones @p base takes by position are @p base's
    keyword-only ones, in order. None for a call whose arguments @p base
    does not take."""
    positional, keywords = _signature(base)
    extra = args[positional:]
    if len(extra) > len(keywords):
        return None
    kwargs = {**dict(zip(keywords, extra)), **kwargs}
    args = args[:positional]
    n = len(next(a for a in args if isinstance(a, (list, tuple))))

    def pick(a: Any, i: int) -> Any:
        return a[i] if isinstance(a, (list, tuple)) else a
    return [(tuple(pick(a, i) for a in args), {k: pick(v, i) for k, v in kwargs.items()})
            for i in range(n)]


def _per_tensor(base: Any) -> Callable[..., Any]:
    """The decomposition of a functional `_foreach_<base>` overload: @p base
    on each tensor (per_tensor_arguments). A call whose arguments @p base
    does not take stays whole (NotImplemented tells the tracer so)."""
    def decomposed(*args: Any, **kwargs: Any) -> Any:
        calls = per_tensor_arguments(base, args, kwargs)
        if calls is None:
            return NotImplemented
        try:
            return [base(*a, **k) for a, k in calls]
        except (RuntimeError, TypeError):
            return NotImplemented
    return decomposed


def _tensor_list(t: Any) -> bool:
    return str(t) in ("Tensor[]", "List[Tensor]")


def base_of(op: torch._ops.OpOverload) -> Optional[Any]:
    """The operator @p op applies to each tensor (aten.add for
    _foreach_add.List), or None for an in-place form or an unknown one."""
    name = op._schema.name.split("::")[-1]
    if not name.startswith(PREFIX) or name.endswith("_"):
        return None
    returns = op._schema.returns
    if len(returns) != 1 or not _tensor_list(returns[0].type) \
            or not any(_tensor_list(a.type) for a in op._schema.arguments):
        return None  # an out= form
    return getattr(torch.ops.aten, name[len(PREFIX):], None)


# The operators of the `_foreach` forms torch.optim's updates and
# clip_grad_norm_ use (SGD, Adam, AdamW, RMSprop, Adagrad, ...).
OPERATORS = ("add", "sub", "mul", "div", "addcmul", "addcdiv", "lerp", "sqrt", "neg", "abs",
             "exp", "reciprocal", "sign", "maximum", "minimum", "clamp_min", "clamp_max", "pow",
             "copy")


def foreach_decompositions() -> Dict[torch._ops.OpOverload, Callable[..., Any]]:
    """The decompositions of the functional overloads of those operators'
    `_foreach` forms."""
    table: Dict[torch._ops.OpOverload, Callable[..., Any]] = {}
    for name in (PREFIX + o for o in OPERATORS):
        packet = getattr(torch.ops.aten, name, None)
        if packet is None:
            continue
        for overload in packet.overloads():
            op = getattr(packet, overload)
            base = base_of(op)
            if base is not None:
                table[op] = _per_tensor(base)
    return table


def _takes(kind: str, v: Any) -> bool:
    """Whether an argument of schema type @p kind takes @p v."""
    if kind.startswith("Optional[") or kind.endswith("?"):
        if v is None:
            return True
        kind = kind[len("Optional["):-1] if kind.startswith("Optional[") else kind[:-1]
    if kind == "Tensor":
        return isinstance(v, torch.Tensor)
    if kind == "Scalar":
        return isinstance(v, (int, float, bool))
    return not isinstance(v, torch.Tensor)


def overload_taking(packet: Any, args: Sequence[Any], kwargs: Dict[str, Any]) -> Optional[Any]:
    """The overload of @p packet (aten.add) whose schema takes @p args and
    @p kwargs by their kinds (add.Tensor for a tensor, add.Scalar for a
    number), returning one tensor; None if none does."""
    for name in packet.overloads():
        op = getattr(packet, name)
        schema = op._schema
        if len(schema.returns) != 1 or str(schema.returns[0].type) != "Tensor":
            continue
        positional = [a for a in schema.arguments if not a.kwarg_only]
        named = {a.name: a for a in schema.arguments}
        if len(args) > len(positional) or any(k not in named for k in kwargs):
            continue
        given = {a.name: v for a, v in zip(positional, args)} | dict(kwargs)
        if all(_takes(str(a.type), given[a.name]) if a.name in given else a.has_default_value()
               for a in schema.arguments):
            return op
    return None
