# SPDX-License-Identifier: MIT
"""The CPU fallback, as TorchNeuron has: an operator the device cannot run
runs on the CPU, its neuron tensors copied over and its results (and the
inputs it writes) copied back. Each operator is logged once and counted
(get_fallback_ops()); TORCH_NEURONX_FALLBACK=error makes it an error
instead, for users who want to know."""

from __future__ import annotations

import logging
import os
import threading
from collections import Counter
from typing import Any, Dict, List, Optional, Tuple

import torch
from torch.utils._pytree import tree_map

log = logging.getLogger("torch_neuronx")

# The bytes of a neuron generator's state after the CPU generator's: its
# Philox offset (python/csrc/runtime/hooks.cpp).
PHILOX_OFFSET_BYTES = 8

_lock = threading.Lock()
_counts: Counter = Counter()
_reasons: Dict[str, str] = {}
_by_reason: Counter = Counter()  # (operator, reason) -> calls


def get_fallback_ops() -> Dict[str, int]:
    """The operators that ran on the CPU in place of the device, with how
    many times each did."""
    with _lock:
        return dict(sorted(_counts.items()))


def fallback_reasons() -> Dict[str, str]:
    """Why each operator of get_fallback_ops() ran on the CPU (its first reason)."""
    with _lock:
        return dict(sorted(_reasons.items()))


def fallback_calls_by_reason() -> Dict[Tuple[str, str], int]:
    """The calls that ran on the CPU, by operator and reason."""
    with _lock:
        return dict(_by_reason)


def _note(op: torch._ops.OpOverload, reason: str) -> None:
    name = op.name()
    if os.environ.get("TORCH_NEURONX_FALLBACK", "").lower() == "error":
        raise NotImplementedError(
            f"neuron: {name} has no neuron kernel ({reason}), and TORCH_NEURONX_FALLBACK=error "
            f"turns the CPU fallback off")
    with _lock:
        first = name not in _counts
        _counts[name] += 1
        _reasons.setdefault(name, reason)
        _by_reason[(name, reason)] += 1
    if first:
        log.warning("neuron: %s runs on the CPU: %s", name, reason)


def _neuron_device(args: Any, kwargs: Dict[str, Any]) -> Optional[torch.device]:
    found: List[torch.device] = []

    def look(x: Any) -> Any:
        if isinstance(x, torch.Tensor) and x.device.type == "neuron":
            found.append(x.device)
        elif isinstance(x, torch.device) and x.type == "neuron":
            found.append(x if x.index is not None
                         else torch.device("neuron", torch.neuron.current_device()))
        return x
    tree_map(look, (args, kwargs))
    return found[0] if found else None


def _argument(args: Tuple[Any, ...], kwargs: Dict[str, Any], i: int, a: Any) -> Any:
    """The value a call gives schema argument @p a, the @p i th."""
    return kwargs.get(a.name) if a.kwarg_only or i >= len(args) else args[i]


def _cpu_generators(op: torch._ops.OpOverload, args: Tuple[Any, ...], kwargs: Dict[str, Any],
                    device: Optional[torch.device]) -> List[Tuple[torch.Generator, torch.Generator]]:
    """Replaces the neuron generator of a random operator (its default one
    when it is given none) by a CPU generator in the same state; returns
    the pairs, whose states go back after the call."""
    pairs = []
    for i, a in enumerate(op._schema.arguments):
        if "Generator" not in str(a.type):
            continue
        given = _argument(args, kwargs, i, a)
        if given is None and device is None:
            continue
        gen = given if given is not None else torch.neuron.default_generator(device)
        if gen.device.type != "neuron":
            continue
        cpu = torch.Generator()
        # (the neuron state ends with the Philox offset: hooks.cpp)
        cpu.set_state(gen.get_state()[:-PHILOX_OFFSET_BYTES])
        pairs.append((gen, cpu))
        kwargs[a.name] = cpu
        if not a.kwarg_only and i < len(args):
            raise NotImplementedError(f"neuron: {op.name()}: a positional generator")
    return pairs


# Arguments operators write without marking them (a!) in their schemas:
# native_batch_norm updates its running statistics when training.
_UNMARKED_WRITES: Dict[str, Tuple[str, ...]] = {
    "aten::native_batch_norm": ("running_mean", "running_var"),
}


def _taking_numbers(op: torch._ops.OpOverload, args: Tuple[Any, ...],
                    kwargs: Dict[str, Any]) -> torch._ops.OpOverload:
    """@p op, or its overload that takes a Scalar where the call gives a
    number for a Tensor: C++ hands a number the Python binding wrapped
    (`x % 4`, remainder.Tensor) to Python as the number, which @p op's
    own overload refuses; its Scalar overload (remainder.Scalar) computes
    what the wrapped number would have."""
    schema = op._schema
    numbers = set()
    for i, a in enumerate(schema.arguments):
        value = _argument(args, kwargs, i, a)
        if str(a.type) == "Tensor" and isinstance(value, (bool, int, float, complex)):
            numbers.add(a.name)
    if not numbers:
        return op
    wanted = [(a.name, "number" if a.name in numbers else str(a.type))  # (Scalar)
              for a in schema.arguments]
    packet = getattr(torch.ops.aten, schema.name.split("::")[-1])
    for overload in packet.overloads():
        candidate = getattr(packet, overload)
        if [(a.name, str(a.type)) for a in candidate._schema.arguments] == wanted:
            return candidate
    return op  # (whose error then names the argument)


def run_on_cpu(op: torch._ops.OpOverload, args: Tuple[Any, ...], kwargs: Dict[str, Any],
               reason: str) -> Any:
    """@p op on the CPU, its neuron tensors copied over and back."""
    _note(op, reason)
    device = _neuron_device(args, kwargs)

    def to_cpu(x: Any) -> Any:
        if isinstance(x, torch.Tensor) and x.device.type == "neuron":
            return x.cpu()
        if isinstance(x, torch.device) and x.type == "neuron":
            return torch.device("cpu")
        return x
    cpu_args, cpu_kwargs = tree_map(to_cpu, (args, dict(kwargs)))
    generators = _cpu_generators(op, cpu_args, cpu_kwargs, device)
    out = _taking_numbers(op, cpu_args, cpu_kwargs)(*cpu_args, **cpu_kwargs)
    for gen, cpu in generators:
        gen.set_state(torch.cat([cpu.get_state(), gen.get_state()[-PHILOX_OFFSET_BYTES:]]))

    # Inputs the operator writes: their new values go back to the device.
    written: Dict[Any, torch.Tensor] = {}
    schema = op._schema
    unmarked = _UNMARKED_WRITES.get(schema.name, ())
    for i, a in enumerate(schema.arguments):
        marked = a.alias_info is not None and a.alias_info.is_write
        if not marked and a.name not in unmarked:
            continue
        original = _argument(args, kwargs, i, a)
        changed = _argument(cpu_args, cpu_kwargs, i, a)
        # A Tensor(a!)[] (the fused optimizers' lists) is written element by element.
        pairs = zip(original, changed) if isinstance(original, (list, tuple)) \
            else [(original, changed)]
        for dst, src in pairs:
            if isinstance(dst, torch.Tensor) and dst.device.type == "neuron":
                if dst.shape != src.shape:
                    dst.resize_(src.shape)
                dst.copy_(src)
        for s in a.alias_info.before_set if marked else ():
            written[s] = original

    def back(x: Any, r: Any) -> Any:
        if r is not None and r.alias_info is not None:
            for s in r.alias_info.before_set:
                if s in written:
                    return written[s]
        if isinstance(x, torch.Tensor) and device is not None:
            return x.to(device)
        return x
    if len(schema.returns) == 1:
        return back(out, schema.returns[0])
    if isinstance(out, tuple):
        return tuple(back(x, r) for x, r in zip(out, schema.returns))
    return out
