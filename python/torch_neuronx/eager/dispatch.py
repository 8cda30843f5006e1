# SPDX-License-Identifier: MIT
"""The Python half of the `neuron` dispatch key's kernel for operators
without one of their own (csrc/runtime/fast_path.cpp runs again, from C++,
the kernels this half hands back): an operator call on neuron tensors runs
as its compiled kernel (kernels.py) when the device can run it, else on
the CPU (fallback.py). Operators that write their inputs (add_, add.out)
run as their functional form, writing into those inputs where its
program allows it, else copying the results in."""

from __future__ import annotations

import functools
from typing import Any, Dict, List, Optional, Tuple

import torch

from ..philox import OWN_EAGER_KERNELS
from . import fallback, kernels, moves
from .signature import Call, call_of, check_devices

_installed = False


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
    # By names and types: masked_fill_.Tensor is masked_fill.Tensor, not .Scalar.
    wanted = [(a.name, str(a.type)) for a in schema.arguments
              if a.alias_info is None or not a.alias_info.is_write or a.name == "self"]
    for overload in packet.overloads():
        candidate = getattr(packet, overload)
        if candidate is op or _writes(candidate):
            continue
        if [(a.name, str(a.type)) for a in candidate._schema.arguments] == wanted:
            return candidate
    return None


def _empty_results(call: Call) -> Optional[Any]:
    """The results of a call with an empty input when every result is
    empty too: nothing to compute, and the CPU's kernel on empty tensors of
    the inputs' shapes gives their shapes and dtypes (as the CPU fallback
    would; meta kernels differ from it, e.g. layer norm's statistics in
    bfloat16). Else None."""
    if not any(t.numel() == 0 for t in call.tensors):
        return None
    device = call.tensors[0].device

    def to_cpu(x: Any) -> Any:
        # The other inputs' values do not matter to results that are empty.
        if isinstance(x, torch.Tensor) and x.device.type == "neuron":
            return torch.zeros_like(x, device="cpu")
        return x
    args, kwargs = call.arguments([to_cpu(x) for x in call.leaves])
    try:
        on_cpu = call.op(*args, **kwargs)
    except (NotImplementedError, RuntimeError):
        return None  # the fallback reports it
    results = on_cpu if isinstance(on_cpu, tuple) else (on_cpu,)
    if not all(isinstance(r, torch.Tensor) and r.numel() == 0 for r in results):
        return None
    made = tuple(torch.empty_strided(r.shape, r.stride(), dtype=r.dtype, device=device)
                 for r in results)
    return made if isinstance(on_cpu, tuple) else made[0]


def _run_functional(op: torch._ops.OpOverload, args: Tuple[Any, ...],
                    kwargs: Dict[str, Any], into: Optional[List[torch.Tensor]] = None
                    ) -> Tuple[Any, Optional[kernels.Kernel]]:
    """@p op's results, and the device kernel that computed them (None
    when they are empty or came from the CPU); with @p into, written into
    those tensors where the kernel can (then the results are None)."""
    call = call_of(op, args, kwargs)
    check_devices(op, call)
    empty = _empty_results(call)
    if empty is not None:
        kernels.count_device_op(op)
        return empty, None
    entry = kernels.kernel_for(call)
    if isinstance(entry, kernels.Kernel):
        kernels.count_device_op(op)
        if into is not None and entry.run_into(call, into):
            return None, entry
        return entry(call), entry
    moved = moves.run(op, args, kwargs)
    if moved is not None:
        kernels.count_device_op(op)
        return moved, None
    return fallback.run_on_cpu(op, args, kwargs, entry.reason), None


def _run_writing(op: torch._ops.OpOverload, args: Tuple[Any, ...],
                 kwargs: Dict[str, Any]) -> Tuple[Any, Optional[kernels.Kernel]]:
    """@p op's results, and the kernel of its functional form that
    computed the values written into its tensors (None when there was
    none)."""
    functional = functional_form(op)
    if functional is None:
        call = call_of(op, args, kwargs)
        check_devices(op, call)
        return fallback.run_on_cpu(op, args, kwargs, "it writes its inputs"), None
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
    # Written directly where the kernel can, else copied.
    result, entry = _run_functional(functional, tuple(fargs), fkwargs, targets)
    if result is not None:
        results = result if isinstance(result, tuple) else (result,)
        for dst, src in zip(targets, results):
            if dst.shape != src.shape:
                dst.resize_(src.shape)
            dst.copy_(src)
    return (targets[0] if len(targets) == 1 else tuple(targets)), entry


@functools.lru_cache(maxsize=None)
def _numbers_in_one_order(op: torch._ops.OpOverload) -> bool:
    """Whether the numbers of a call of @p op, ordered as C++ orders them
    (positional arguments, then keywords by name, fast_path.cpp), are in
    the order its functional form's kernel takes them: the arguments the
    two share are keywords in both or in neither."""
    functional = functional_form(op)
    kinds = {a.name: a.kwarg_only for a in op._schema.arguments}
    return functional is not None and all(
        kinds.get(a.name) == a.kwarg_only for a in functional._schema.arguments)


@functools.lru_cache(maxsize=None)
def _overload(name: str, overload: str) -> torch._ops.OpOverload:
    namespace, base = name.split("::")
    return getattr(getattr(getattr(torch.ops, namespace), base), overload or "default")


def dispatch_boxed(name: str, overload: str, *args: Any,
                   **kwargs: Any) -> Tuple[Any, Optional[Any], Optional[str], bool]:
    """A call of operator @p name (its overload @p overload) that C++ has
    no kernel of its signature for: its results; the EagerKernel that
    computed them (for an in-place or `out=` operator, the values written
    into its tensors) when any call of the same signature (the operator, its
    tensors' dtypes and shapes, its other arguments) may run it again; the
    operator that kernel counts as (get_device_ops); and whether the kernel
    takes the call's numbers as inputs after its tensors (then calls with
    other numbers may run it too)."""
    op = _overload(name, overload)
    writes = _writes(op)
    result, entry = (_run_writing if writes else _run_functional)(op, args, kwargs)
    # (not results reshaped from the program's)
    if entry is None or entry.shapes is not None or (
            writes and entry.numbers_as_inputs and not _numbers_in_one_order(op)):
        return result, None, None, False
    return (result, entry.kernel, (functional_form(op) if writes else op).name(),
            entry.numbers_as_inputs)


# Copies that torch's composite kernels already make on the device.
_NATIVE_COPIES = ("aten::clone", "aten::_to_copy", "aten::lift_fresh_copy", "aten::_unsafe_view")


def _lowered_composites() -> List[torch._ops.OpOverload]:
    """The lowered operators that a composite kernel would otherwise run
    for the device as other operators (native_layer_norm as
    native_batch_norm, add.Tensor as add.out): computations, not views,
    not writes, not copies."""
    return [op for op in kernels.LOWERINGS
            if (op.has_kernel_for_dispatch_key("CompositeExplicitAutograd")
                or op.has_kernel_for_dispatch_key("CompositeExplicitAutogradNonFunctional"))
            and not op.has_kernel_for_dispatch_key("PrivateUse1")
            and not any(r.alias_info is not None for r in op._schema.returns)
            and not _writes(op) and op.name().split(".")[0] not in _NATIVE_COPIES
            and op not in OWN_EAGER_KERNELS]


def install() -> None:
    """Claims the lowered operators at the device's key in place of their
    composite kernels (once); every other operator reaches the device's
    fallback kernel, which fast_path.cpp registers."""
    global _installed
    if not _installed:
        for op in _lowered_composites():
            torch.ops.neuron.claim_operator(op.name())
        _installed = True
