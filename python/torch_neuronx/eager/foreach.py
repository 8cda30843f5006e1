# SPDX-License-Identifier: MIT
"""The `_foreach` operators on the device as multi-tensor programs: an
optimizer's update of many parameters (torch.optim's default, foreach,
form) is a job per operator and group of tensors, not one per operator
and tensor as PyTorch's per-tensor kernel for other backends makes it.

Each call is split into groups whose tensors, numbers and results fit a
job's bindings; each group runs the program of its signature
(kernels.kernel_for, numbers as inputs once they change). In-place forms
(`_foreach_mul_`) write into their tensors where the program allows it
(torch.ops.neuron's run_into), else copy the results in. A group the device
cannot run as one program (tensors of other dtypes, 0-dimensional ones,
an operator without a lowering) runs tensor by tensor through the
device's dispatch, as PyTorch's kernel does."""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Sequence, Tuple

import torch

from ..foreach import OPERATORS, PREFIX, base_of, per_tensor_arguments
from . import kernels
from .dispatch import functional_form
from .signature import call_of, check_devices

_aten = torch.library.Library("aten", "IMPL")  # noqa: TOR901

# A job binds at most 64 buffers (hw/neuron_regs.h); a group's inputs,
# numbers and results stay below this, leaving room for the program's own
# (fused_optim.py's groups too).
GROUP_BINDINGS = 56


def _group_size(args: Sequence[Any], kwargs: Dict[str, Any]) -> int:
    """Tensors per group: each brings one per list argument, its number of
    a list of numbers, and its result."""
    per_tensor = 1 + sum(1 for a in list(args) + list(kwargs.values())
                         if isinstance(a, (list, tuple)))
    return max(1, GROUP_BINDINGS // per_tensor)


def _sliced(values: Sequence[Any], start: int, stop: int) -> List[Any]:
    return [v[start:stop] if isinstance(v, (list, tuple)) else v for v in values]


def _one_by_one(base: Any, args: Sequence[Any], kwargs: Dict[str, Any]) -> List[torch.Tensor]:
    calls = per_tensor_arguments(base, args, kwargs)
    assert calls is not None  # (the group was split from a call its operator takes)
    return [base(*a, **k) for a, k in calls]


def _results(functional: torch._ops.OpOverload, args: Sequence[Any], kwargs: Dict[str, Any],
             into: Optional[List[torch.Tensor]] = None) -> List[Optional[torch.Tensor]]:
    """The results of a functional `_foreach` call, a program per group;
    with @p into, written into those tensors where the group's program
    allows it (then its results are None)."""
    base = base_of(functional)
    lists = [a for a in args if isinstance(a, (list, tuple))]
    n = len(lists[0]) if lists else 0
    if base is None or any(len(a) != n for a in lists):
        raise RuntimeError(f"{functional}: its tensor and number lists must have one length, "
                           f"not {[len(a) for a in lists]}")
    size = _group_size(args, kwargs)
    results: List[Optional[torch.Tensor]] = []
    for start in range(0, n, size):
        group = _sliced(args, start, start + size)
        group_kwargs = dict(zip(kwargs, _sliced(list(kwargs.values()), start, start + size)))
        call = call_of(functional, tuple(group), group_kwargs)
        check_devices(functional, call)
        entry = kernels.kernel_for(call) if call.tensors else None
        if isinstance(entry, kernels.Kernel):
            kernels.count_device_op(functional)
            if into is not None and entry.run_into(call, into[start:start + size]):
                results += [None] * len(entry.meta)
            else:
                results += list(entry(call))
        else:
            results += _one_by_one(base, group, group_kwargs)
    return results


def _functional_kernel(functional: torch._ops.OpOverload) -> Any:
    def run(*args: Any, **kwargs: Any) -> List[Optional[torch.Tensor]]:
        return _results(functional, args, kwargs)  # (all tensors: nothing is written into)
    return run


def _in_place_kernel(op: torch._ops.OpOverload, functional: torch._ops.OpOverload) -> Any:
    def run(*args: Any, **kwargs: Any) -> None:
        for dst, src in zip(args[0], _results(functional, args, kwargs, into=list(args[0]))):
            if src is not None:
                dst.copy_(src)
    return run


def _overloads() -> List[Tuple[torch._ops.OpOverload, Optional[torch._ops.OpOverload]]]:
    """Each in-place and functional overload of the operators' `_foreach`
    forms, with the functional overload computing it."""
    found = []
    for name in OPERATORS:
        if name == "copy":  # (a write, not a computation)
            continue
        for packet_name in (PREFIX + name, PREFIX + name + "_"):
            packet = getattr(torch.ops.aten, packet_name, None)
            for overload in packet.overloads() if packet is not None else ():
                op = getattr(packet, overload)
                if base_of(op) is not None:
                    found.append((op, op))
                elif packet_name.endswith("_"):
                    functional = functional_form(op)
                    if functional is not None and base_of(functional) is not None:
                        found.append((op, functional))
    return found


def install() -> None:
    """Registers the kernels at the device's key (once, at import)."""
    for op, functional in _overloads():
        name = op.name().split("::")[-1]
        kernel = _functional_kernel(op) if op is functional else _in_place_kernel(op, functional)
        _aten.impl(name, kernel, "PrivateUse1")


install()
