# SPDX-License-Identifier: MIT
"""Device kernels of operator calls: each signature compiled once through
the FX lowering and the compiler (capture -> lower -> compile_graph), kept
in memory and on disk (torch_neuronx.cache: under $NEURON_EAGER_CACHE,
else ~/.cache/neuron/eager, in a directory per version of the op library
and the compiler), so a second call, or a second process, costs one job
submission."""

from __future__ import annotations

import functools
import hashlib
import logging
import threading
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Tuple, Union

import torch

from .. import cache
from ..capture import capture
from ..lowering import LOWERINGS, UnsupportedOperatorError, lower
from ..lowering.registry import FLOATS_AND_INT32
from ..philox import INT32_OPERANDS
from ..strided import OPERATORS as STRIDED_COPIES
from ..foreach import base_of
from .direct import capture_call, capture_foreach
from .signature import Call

log = logging.getLogger("torch_neuronx")

# Output dtypes the device computes in (others fall back).
_DEVICE_DTYPES = (torch.float32, torch.bfloat16)


@dataclass
class Kernel:
    kernel: Any  # torch.classes.neuron.EagerKernel
    single: bool  # the operator returns one tensor (else a tuple)
    # The operator's result shapes where the program's differ: a
    # 0-dimensional result, which the program computes as [1] (the IR has
    # no rank 0), or one of 0-dimensional inputs, which it takes as [1]
    # (_as_program_input).
    shapes: Optional[List[List[int]]] = None
    # The program takes the call's numbers as inputs after its tensors (it
    # serves every call of the family; Call.family).
    numbers_as_inputs: bool = False

    def __call__(self, call: Call) -> Any:
        outs = self.kernel.run(self.inputs(call))
        if self.shapes is not None:
            outs = [o.view(s) for o, s in zip(outs, self.shapes)]
        return outs[0] if self.single else tuple(outs)

    def inputs(self, call: Call) -> List[torch.Tensor]:
        tensors = [_as_program_input(t) for t in call.tensors]
        if self.numbers_as_inputs:
            device = call.tensors[0].device
            tensors += [torch.ops.neuron.number_on_device(call.leaves[i], device)
                        for i in call.number_positions]
        return tensors

    def run_into(self, call: Call, outputs: List[torch.Tensor]) -> bool:
        """Writes the results into @p outputs when they fit them exactly
        (contiguous, of the results' dtypes and shapes, sharing no memory
        but, where the program allows it, exactly an input's: an in-place
        call); False, running nothing, when they do not."""
        meta = self.meta
        shapes = self.shapes if self.shapes is not None else [list(m.shape) for m in meta]
        if len(outputs) != len(meta) or any(
                o.device.type != "neuron" or list(o.shape) != s for o, s in zip(outputs, shapes)):
            return False
        # (a 0-dimensional result is the program's [1])
        into = [o if o.shape == m.shape or not o.is_contiguous() else o.view(m.shape)
                for o, m in zip(outputs, meta)]
        return bool(self.kernel.run_into(self.inputs(call), into))

    @functools.cached_property
    def meta(self) -> List[torch.Tensor]:
        return self.kernel.output_meta()


def _as_program_input(t: torch.Tensor) -> torch.Tensor:
    """The compiler's tensors have at least one dimension: a 0-dimensional
    one is passed as [1], which broadcasts as it does."""
    if t.dim() == 0:
        return t.view(1)
    return t if t.is_contiguous() else t.contiguous()


@dataclass
class Unsupported:
    reason: str


Entry = Union[Kernel, Unsupported]

_lock = threading.Lock()
_memory: Dict[Any, Entry] = {}
compiles = 0  # kernels compiled by this process (not read from disk)
compile_seconds = 0.0  # the time those compiles took
_device_ops: Counter = Counter()


def count_device_op(op: torch._ops.OpOverload) -> None:
    _device_ops[op.name()] += 1


def get_device_ops() -> Dict[str, int]:
    """The operators that ran on the device, with how many times each did
    (counted here, and by the C++ dispatcher for the kernels it kept)."""
    counts = Counter(_device_ops)
    names, runs = torch.ops.neuron.kept_kernel_runs()
    for name, n in zip(names, runs):
        counts[name] += n
    return dict(sorted(counts.items()))


def _file_of(key: Tuple[Any, ...]) -> Optional[Path]:
    d = cache.directory()
    if d is None:
        return None
    return d / (hashlib.sha256(repr(key).encode()).hexdigest()[:32] + cache.SUFFIX)


def _why_not(call: Call) -> Optional[str]:
    """Why the call cannot be compiled, judged before trying."""
    schema = call.op._schema
    if any(r.alias_info is not None for r in schema.returns):
        return "it returns a view of an input"
    if (not all(str(r.type) == "Tensor" for r in schema.returns) or not schema.returns) \
            and base_of(call.op) is None:
        return "it returns something other than tensors"
    if not call.tensor_positions:
        return "it has no neuron tensor input"
    for t in call.tensors:
        # (copies of strided views move bits, computing nothing)
        moved = call.op in STRIDED_COPIES and t.dtype in FLOATS_AND_INT32
        if not moved and t.dtype not in _DEVICE_DTYPES and t.dtype != torch.bool and not (
                t.dtype == torch.int32 and call.op in INT32_OPERANDS):
            return f"the device computes in float32 and bfloat16, not {t.dtype}"
        if t.numel() == 0:
            return "an input is empty"
    return None


def _name(op: torch._ops.OpOverload) -> str:
    return op.name().replace("::", "_").replace(".", "_")


def _compile(call: Call, numbers_as_inputs: bool = False) -> Entry:
    why = _why_not(call)
    if why:
        return Unsupported(why)
    examples = [torch.zeros(t.shape or (1,), dtype=t.dtype) for t in call.tensors]
    shapes = None
    if any(t.dim() == 0 for t in call.tensors):
        shapes = _scalar_result_shapes(call, examples)
        if isinstance(shapes, Unsupported):
            return shapes
    try:
        captured, lowered = _captured_and_lowered(call, examples, numbers_as_inputs)
    except UnsupportedOperatorError as e:
        return Unsupported(f"the compiler has no lowering of {e.kind}"
                           f"{' (' + e.reason + ')' if e.reason else ''}")
    except Exception as e:  # noqa: BLE001 - what PyTorch's tracing refuses
        return Unsupported(f"it cannot be captured: {type(e).__name__}: {e}".splitlines()[0])
    kernel = _compiled(lowered)
    if isinstance(kernel, Unsupported):
        return kernel
    expected = _expected_outputs(captured)
    got = kernel.output_meta()
    if len(expected) != len(got) or not all(
            e.dtype == g.dtype and (tuple(e.shape) == tuple(g.shape)
                                    or e.dim() == 0 and tuple(g.shape) == (1,))
            for e, g in zip(expected, got)):
        return Unsupported("the compiled program's outputs differ from the operator's")
    if shapes is None:
        shapes = [list(e.shape) for e in expected]
    global compiles
    compiles += 1
    returns = call.op._schema.returns  # (a `_foreach` form returns one list)
    return Kernel(kernel, single=len(returns) == 1 and str(returns[0].type) == "Tensor",
                  shapes=None if shapes == [list(g.shape) for g in got] else shapes,
                  numbers_as_inputs=numbers_as_inputs)


def _compiled(lowered: Any) -> Any:
    """The EagerKernel of a lowered graph, or why there is none."""
    if lowered.bool_inputs:
        return Unsupported("the device has no bool tensors")
    try:
        model = torch.ops.neuron.compile_graph(lowered.graph, lowered.weight_names,
                                               lowered.weights, lowered.inputs, lowered.outputs,
                                               "", [])
    except RuntimeError as e:
        return Unsupported(str(e).splitlines()[0])
    return torch.ops.neuron.eager_kernel(model)


def kernel_of_function(key: Tuple[Any, ...], name: str, fn: Callable[..., Any],
                       examples: Callable[[], List[torch.Tensor]]) -> Entry:
    """The kernel computing @p fn (a function of tensors returning a list of
    them, traced on what @p examples makes, CPU tensors of the inputs'
    dtypes and shapes) named @p name, kept under @p key in memory and on
    disk like an operator's; or why the device cannot run it."""
    def compile_function() -> Entry:
        try:
            captured = capture(fn, examples(), kept_whole=LOWERINGS, api="neuron")
            kernel = _compiled(lower(captured, name))
        except UnsupportedOperatorError as e:
            return Unsupported(f"the compiler has no lowering of {e.kind}")
        if isinstance(kernel, Unsupported):
            return kernel
        global compiles
        compiles += 1
        return Kernel(kernel, single=False)

    with _lock:
        entry = _memory.get(key)
        if entry is None:
            entry = _memory[key] = _loaded_or_compiled(key, compile_function)
        return entry


def _captured_and_lowered(call: Call, examples: List[torch.Tensor],
                          numbers_as_inputs: bool = False) -> Tuple[Any, Any]:
    """The call's graph and its IR: built directly when the operator has a
    lowering of its own (or is a `_foreach` form of one), else (or when
    that form is not lowered) traced into PyTorch's decompositions. With @p numbers_as_inputs, the first
    way only (its numbers as inputs; a lowering that reads a number's value
    raises), or UnsupportedOperatorError."""
    if base_of(call.op) is not None:
        captured = capture_foreach(call, examples, _name(call.op), numbers_as_inputs)
        return captured, lower(captured, _name(call.op), bool_inputs_u8=True)
    if call.op in LOWERINGS:
        try:
            captured = capture_call(call, examples, _name(call.op), numbers_as_inputs)
            return captured, lower(captured, _name(call.op), scalar_results=True,
                                   bool_inputs_u8=True)
        except UnsupportedOperatorError:
            if numbers_as_inputs:
                raise
    elif numbers_as_inputs:
        raise UnsupportedOperatorError(call.op.name(), "", "it is not lowered as one operator")
    captured = capture(call.rebuilt(), examples, kept_whole=LOWERINGS, api="neuron")
    return captured, lower(captured, _name(call.op), scalar_results=True, bool_inputs_u8=True)


def _scalar_result_shapes(call: Call, examples: List[torch.Tensor]) -> Any:
    """For a call with 0-dimensional inputs, compiled with them as [1]:
    the operator's result shapes when the [1] form gives the same results
    up to that shape (None when it gives the very shapes), else Unsupported."""
    def on_meta(tensors: List[torch.Tensor]) -> List[torch.Tensor]:
        r = call.rebuilt()(*[t.to("meta") for t in tensors])
        return list(r) if isinstance(r, (tuple, list)) else [r]
    try:
        real = on_meta([torch.zeros(t.shape, dtype=t.dtype) for t in call.tensors])
        promoted = on_meta(examples)
    except (NotImplementedError, RuntimeError) as e:
        return Unsupported(f"a 0-dimensional input, and no meta kernel to check its [1] form: {e}")
    if any(r.numel() != p.numel() or r.dtype != p.dtype for r, p in zip(real, promoted)):
        return Unsupported("a 0-dimensional input, whose [1] form the operator treats otherwise")
    shapes = [list(r.shape) for r in real]
    return None if shapes == [list(p.shape) for p in promoted] else shapes


def _expected_outputs(captured: Any) -> List[torch.Tensor]:
    out = next(n for n in captured.gm.graph.nodes if n.op == "output").args[0]
    nodes = list(out) if isinstance(out, (tuple, list)) else [out]
    return [captured.values[n] if isinstance(n, torch.fx.Node) else n for n in nodes]


def _load(path: Path) -> Optional[Entry]:
    saved = cache.load(path)
    if saved is None:
        return None
    return Kernel(saved["kernel"], single=saved["single"], shapes=saved.get("shapes"),
                  numbers_as_inputs=saved.get("numbers_as_inputs", False))


def _store(entry: Kernel, path: Path) -> None:
    cache.store(path, entry.kernel, single=entry.single, shapes=entry.shapes,
                numbers_as_inputs=entry.numbers_as_inputs)


def _loaded_or_compiled(key: Tuple[Any, ...], compile: Callable[[], Entry]) -> Entry:
    """The kernel kept on disk under @p key, else what @p compile gives
    (timed, and stored when it is a kernel)."""
    path = _file_of(key)
    entry = _load(path) if path is not None and path.is_file() else None
    if entry is None:
        global compile_seconds
        started = time.perf_counter()
        entry = compile()
        compile_seconds += time.perf_counter() - started
        if isinstance(entry, Kernel) and path is not None:
            _store(entry, path)
    return entry


# Calls that differ only in their numbers (Call.family): an optimizer's
# update, whose learning rate a scheduler changes at every step. The first
# value compiles a program with the numbers in it, as every call does; a
# second value compiles one taking them as inputs, which then serves every
# value. Per family: the first call's key, then that program, or
# _SPECIALISED where the operator's lowering needs the numbers' values.
_SPECIALISED = "specialised"
_families: Dict[Tuple[Any, ...], Any] = {}
_family_sizes: Counter = Counter()
_RECOMPILES_WARNED = 8


def _numbers_may_be_inputs(call: Call) -> bool:
    # (in float32, the [1] input is the number as the CPU computes with it)
    return bool(call.number_positions) and all(t.dtype == torch.float32 for t in call.tensors)


def _family_kernel(call: Call) -> Optional[Kernel]:
    """The program serving every call of @p call's family, compiled at its
    second value; None before that or where there is none. Lock held."""
    seen = _families.get(call.family)
    if isinstance(seen, Kernel):
        return seen
    if seen is None:
        _families[call.family] = call.key
        return None
    if seen == _SPECIALISED or seen == call.key:
        return None
    entry = _loaded_or_compiled(call.family, lambda: _compile(call, numbers_as_inputs=True))
    if isinstance(entry, Kernel):
        _families[call.family] = entry
        return entry
    _families[call.family] = _SPECIALISED
    return None


def _count_specialised(call: Call) -> None:
    """Warns once when a family has compiled many programs, each for its
    own numbers. Lock held."""
    _family_sizes[call.family] += 1
    if _family_sizes[call.family] == _RECOMPILES_WARNED:
        values = [call.leaves[i] for i in call.number_positions]
        log.warning("neuron: %s has compiled %d programs, one per value of its numbers "
                    "(now %s), because its lowering needs their values; pass a changing "
                    "value as a tensor to compile it once", call.op.name(),
                    _RECOMPILES_WARNED, values)


def kernel_for(call: Call) -> Entry:
    """The call's kernel, or why the device cannot run it."""
    entry = _memory.get(call.key)
    if entry is not None:
        return entry
    numbers = _numbers_may_be_inputs(call)
    if numbers:
        seen = _families.get(call.family)
        if isinstance(seen, Kernel):
            return seen
    with _lock:
        entry = _memory.get(call.key)
        if entry is not None:
            return entry
        if numbers:
            family = _family_kernel(call)
            if family is not None:
                return family
        entry = _loaded_or_compiled(call.key, lambda: _compile(call))
        if numbers and isinstance(entry, Kernel):
            _count_specialised(call)
        _memory[call.key] = entry
        return entry
