# SPDX-License-Identifier: MIT
"""The `neuron` dispatch key's fallback kernel: an operator call on neuron
tensors runs as its compiled kernel (kernels.py) when the device can run
it, else on the CPU (fallback.py). Operators that write their inputs
(add_, add.out) run as their functional form and copy the result in."""

from __future__ import annotations

import functools
from typing import Any, Dict, List, Optional, Tuple

import torch

from . import fallback, kernels
from .signature import call_of, check_devices

_library: Optional[torch.library.Library] = None


def _writes(op: torch._ops.OpOverload) -> bool:
    return any(a.alias_info is not None and a.alias_info.is_write for a in op._schema.arguments)


@functools.lru_cache(maxsize=None)
def functional_form(op: torch._ops.OpOverload) -> Optional[torch._ops.OpOverload]:
    """The overload computing what @p op writes (add_.Tensor -> add.Tensor,
    add.out -> add.Tensor), or None."""
    schema = op._schema
    name = schema.name.split("::")[-1]
    written = [a for a in schema.arguments if a.alias_info is not None and a.alias_info.is_write]
    in_place = name.endswith("_") and [a.name for a in written] == ["self"]
    out_form = not name.endswith("_") and all(a.kwarg_only for a in written)
    if not (in_place or out_form):
        return None  # it writes other inputs (batch norm's running statistics)
    base = name[:-1] if name.endswith("_") else name
    packet = getattr(torch.ops.aten, base, None)
    if packet is None:
        return None
    wanted = [a.name for a in schema.arguments
              if a.alias_info is None or not a.alias_info.is_write or a.name == "self"]
    for overload in packet.overloads():
        candidate = getattr(packet, overload)
        if candidate is op or _writes(candidate):
            continue
        if [a.name for a in candidate._schema.arguments] == wanted:
            return candidate
    return None


def _run_functional(op: torch._ops.OpOverload, args: Tuple[Any, ...],
                    kwargs: Dict[str, Any], into: Optional[List[torch.Tensor]] = None) -> Any:
    """@p op's results; with @p into, written into those tensors where
    the device kernel can (then None is returned)."""
    call = call_of(op, args, kwargs)
    check_devices(op, call)
    entry = kernels.kernel_for(call)
    if isinstance(entry, kernels.Kernel):
        kernels.count_device_op(op)
        if into is not None and entry.run_into(call, into):
            return None
        return entry(call)
    return fallback.run_on_cpu(op, args, kwargs, entry.reason)


def _run_writing(op: torch._ops.OpOverload, args: Tuple[Any, ...],
                 kwargs: Dict[str, Any]) -> Any:
    functional = functional_form(op)
    if functional is None:
        call = call_of(op, args, kwargs)
        check_devices(op, call)
        return fallback.run_on_cpu(op, args, kwargs, "it writes its inputs")
    schema = op._schema
    in_place = schema.name.endswith("_")
    values: Dict[str, Any] = {}
    for i, a in enumerate(schema.arguments):
        if a.kwarg_only or i >= len(args):
            if a.name in kwargs:
                values[a.name] = kwargs[a.name]
        else:
            values[a.name] = args[i]
    written = [a.name for a in schema.arguments
               if a.alias_info is not None and a.alias_info.is_write]
    fargs = [values[a.name] for a in functional._schema.arguments
             if not a.kwarg_only and a.name in values]
    fkwargs = {a.name: values[a.name] for a in functional._schema.arguments
               if a.kwarg_only and a.name in values}
    targets = [values["self"]] if in_place else [values[n] for n in written]
    # An out= call writes its outputs directly; an in-place one (whose
    # output is an input) gets a copy.
    result = _run_functional(functional, tuple(fargs), fkwargs, None if in_place else targets)
    if result is not None:
        results = result if isinstance(result, tuple) else (result,)
        for dst, src in zip(targets, results):
            if dst.shape != src.shape:
                dst.resize_(src.shape)
            dst.copy_(src)
    return targets[0] if len(targets) == 1 else tuple(targets)


def _dispatch(op: torch._ops.OpOverload, *args: Any, **kwargs: Any) -> Any:
    if _writes(op):
        return _run_writing(op, args, kwargs)
    return _run_functional(op, args, kwargs)


def install() -> None:
    """Registers the fallback for the device's dispatch key (once)."""
    global _library
    if _library is None:
        _library = torch.library.Library("_", "IMPL")  # noqa: TOR901
        _library.fallback(_dispatch, "PrivateUse1")
