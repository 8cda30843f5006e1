# SPDX-License-Identifier: MIT
"""Lowering an FX graph of ATen operators (torch_neuronx.capture) into the
compiler's IR graph (torch.classes.neuron.Graph): each operator node
through its record in the table (registry.py), constants folded, weights
kept as inputs of the IR graph."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

import torch

from .errors import UnsupportedInputError, UnsupportedOperatorError
from .registry import CAST_DTYPES, IR_DTYPES, LOWERINGS, operator_name
from .values import Expanded, External, Masked, Tensor, Transposed, Value, Weight
from ..capture import Captured, call_site, node_scope

# The device has no bool: a bool input of the traced function is an fp32
# input of 0 and 1, which only masked_fill takes (as its mask).
BOOL_INPUT_DTYPE = torch.float32
# IR operators that move a bool input's 0 and 1 without computing on them.
_BOOL_MOVES = frozenset({"reshape", "transpose", "slice", "concat", "split"})
# Operators that read a bool operand as a mask or convert it.
_BOOL_CONSUMERS = frozenset({"where", "cast"})

_IR_KEYWORDS = {"graph", "input", "const", "output"}

# Operators whose value depends on their operand's shape alone (fixed when
# traced): folded even when the operand is computed on the device.
_SHAPE_ONLY = frozenset({torch.ops.aten.full_like.default, torch.ops.aten.zeros_like.default,
                         torch.ops.aten.ones_like.default})

Operand = Union[Tensor, float]


@dataclass
class Lowered:
    """A lowered graph: the IR graph, its weights (inputs bound to values
    when compiled), its other inputs and its outputs, by IR name."""
    graph: Any  # torch.classes.neuron.Graph
    weight_names: List[str]
    weights: List[torch.Tensor]
    inputs: List[str]
    outputs: List[str]
    tuple_output: bool
    log: List[str] = field(default_factory=list)
    # Positions of the bool inputs, which the caller passes as
    # BOOL_INPUT_DTYPE 0 and 1.
    bool_inputs: Tuple[int, ...] = ()
    # The FX node each IR value was emitted for, by their names (the
    # compiler's errors name IR values).
    ir_nodes: Dict[str, str] = field(default_factory=dict)


def is_operator(node: torch.fx.Node) -> bool:
    """A node computing with tensors: counted by analyze, placed on the
    device or the CPU by the partitioner (getitem only picks a result)."""
    return node.op == "call_function" and isinstance(node.target, torch._ops.OpOverload)


class Context:
    """The state of one lowering: the IR graph being built and what each
    FX node stands for."""

    def __init__(self, captured: Captured, name: str) -> None:
        self.captured = captured
        self.graph = torch.classes.neuron.Graph(self._ir_name(name))
        self.env: Dict[torch.fx.Node, Any] = {}
        self.names: Dict[str, int] = {}
        self.used: set = set()
        self.weight_names: List[str] = []
        self.weights: List[torch.Tensor] = []
        self.externals: List[External] = []  # in the order of their IR inputs
        self.node: Optional[torch.fx.Node] = None
        self.log: List[str] = []
        self.ir_nodes: Dict[str, str] = {}  # IR value -> the FX node it was emitted for
        self.input_names: set = set()
        self._emitted: List[str] = []
        # A 0-dimensional result of a reduction may be the IR's [1] (its
        # values have rank >= 1): the caller views it as 0-dimensional (an
        # eager kernel does; a traced program returns what the IR has).
        self.scalar_results = False
        # Bool inputs as the IR's u8 (one byte, 0 or 1: torch.bool's own
        # layout, which an eager kernel passes as it is), else as
        # BOOL_INPUT_DTYPE 0 and 1 (which a traced program converts them to).
        self.bool_inputs_u8 = False

    # --- names ---------------------------------------------------------------
    @staticmethod
    def _ir_name(hint: str) -> str:
        base = re.sub(r"[^A-Za-z0-9_]", "_", hint) or "v"
        if not (base[0].isalpha() or base[0] == "_"):
            base = "v_" + base
        return base + "_" if base in _IR_KEYWORDS else base

    def fresh(self, hint: str) -> str:
        """A name no value of the IR graph has yet."""
        base = self._ir_name(hint)
        n = self.names.get(base, 0)
        name = base if n == 0 else f"{base}_{n}"
        while name in self.used:
            n += 1
            name = f"{base}_{n}"
        self.names[base] = n + 1
        self.used.add(name)
        return name

    def node_hint(self, op: str) -> str:
        """The IR name of an operator of the node being lowered: the path
        of its module in the traced model and the IR operator
        ("fc1_matmul"), or the operator alone ("softmax"). Profiles and the
        compiler's plan name instructions by it."""
        scope = node_scope(self.node) if self.node is not None else ""
        return f"{scope}_{op}" if scope else op

    # --- errors --------------------------------------------------------------
    def unsupported(self, reason: str = "") -> UnsupportedOperatorError:
        assert self.node is not None
        if self.node in self.captured.inputs:
            # One of the user's inputs: named as the user passed it, with its
            # dtype and shape, where it came from (not a graph placeholder).
            i = self.captured.inputs.index(self.node)
            x = self.captured.example_inputs[i]
            e: UnsupportedOperatorError = UnsupportedInputError(
                self.captured.input_names[i], self.captured.name, x.dtype, list(x.shape), reason)
            e.node_name = self.node.name
            return e
        e = UnsupportedOperatorError(operator_name(self.node.target), call_site(self.node),
                                     reason)
        e.node_name = self.node.name
        return e

    # --- values of the traced run --------------------------------------------
    def value(self, node: torch.fx.Node) -> Any:
        """@p node's value when the model ran on the example inputs."""
        return self.captured.values[node]

    def out_shape(self) -> Tuple[int, ...]:
        assert self.node is not None
        return tuple(self.value(self.node).shape)

    def arg(self, i: Optional[int], name: Optional[str] = None, default: Any = None) -> Any:
        """Positional argument @p i (None: keyword-only), else keyword @p name,
        of the node, as the lowering sees it: a Value for a tensor, else the
        Python value."""
        assert self.node is not None
        if i is not None and i < len(self.node.args):
            a = self.node.args[i]
        elif name is not None and name in self.node.kwargs:
            a = self.node.kwargs[name]
        else:
            return default
        return self._resolve(a)

    def _resolve(self, a: Any) -> Any:
        if isinstance(a, torch.fx.Node):
            if a not in self.env:
                raise self.unsupported(f"its operand {a.name} has no value the device can use")
            return self.env[a]
        if isinstance(a, (list, tuple)):
            return type(a)(self._resolve(x) for x in a)
        return a

    # --- IR values -----------------------------------------------------------
    def ir_dtype(self, dtype: torch.dtype) -> str:
        if dtype not in IR_DTYPES:
            if dtype == torch.int64:
                raise self.unsupported("dtype torch.int64 (the device's integers are int32: "
                                       "pass int32 tensors)")
            raise self.unsupported(f"dtype {dtype} (the device computes in "
                                   f"{', '.join(str(d) for d in IR_DTYPES)})")
        return IR_DTYPES[dtype]

    def input(self, hint: str, shape: Sequence[int], dtype: torch.dtype) -> Tensor:
        """A new input of the IR graph; a bool one is BOOL_INPUT_DTYPE. A
        0-dimensional one is the IR's [1] under scalar_results."""
        if len(shape) == 0:
            if not self.scalar_results:
                raise self.unsupported("a 0-dimensional tensor operand")
            shape = (1,)
        if any(int(s) == 0 for s in shape):
            raise self.unsupported(f"an empty tensor operand {list(shape)} (the IR's sizes are "
                                   ">= 1)")
        name = self.fresh(hint)
        if dtype == torch.bool:
            ir = "u8" if self.bool_inputs_u8 else self.ir_dtype(BOOL_INPUT_DTYPE)
        else:
            ir = self.ir_dtype(dtype)
        node = self.graph.input(name, ir, [int(s) for s in shape])
        self.input_names.add(name)
        return Tensor(node, name, tuple(int(s) for s in shape), dtype)

    def tensor(self, v: Any, what: str) -> Tensor:
        """@p v as a value of the IR graph: weights and external tensors
        become inputs on their first use, transposes are materialised."""
        if isinstance(v, Tensor):
            return v
        if isinstance(v, Weight):
            if v.lowered is None:
                v.lowered = self.input(v.hint, v.value.shape, v.value.dtype)
                self.weight_names.append(v.lowered.name)
                # (a 0-dimensional one is the IR's [1]: see input())
                self.weights.append(v.value.detach().reshape(v.lowered.shape).contiguous())
            return v.lowered
        if isinstance(v, External):
            if v.lowered is None:
                v.lowered = self.input(v.name, v.value.shape, v.value.dtype)
                self.externals.append(v)
            return v.lowered
        if isinstance(v, Transposed):
            perm = list(range(len(v.source.shape)))
            perm[-2], perm[-1] = perm[-1], perm[-2]
            return self.emit("transpose", [v.source], shape=v.shape, dims=perm)
        if isinstance(v, Masked):
            raise self.unsupported(f"{what} is causally masked and not the operand of a softmax "
                                   "(the device applies causal masks in softmax only)")
        if isinstance(v, Expanded):
            raise self.unsupported(f"{what} is a tensor expanded from {list(v.source.shape)} to "
                                   f"{list(v.view)}, which the device takes only as an operand "
                                   "of add, sub, mul, div or baddbmm's mask (it broadcasts it "
                                   "there instead of copying it)")
        raise self.unsupported(f"{what} must be a tensor, not {v!r}")

    def operand(self, v: Any, what: str) -> Operand:
        """A tensor or a literal: numbers and 0-dimensional constants."""
        if isinstance(v, Weight) and v.value.dim() == 0:
            return float(v.value)
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            return float(v)
        return self.tensor(v, what)

    def emit(self, op: str, operands: Sequence[Operand], *, result: bool = True,
             shape: Optional[Sequence[int]] = None, flags: Sequence[str] = (),
             dtype: Optional[torch.dtype] = None, **attrs: Any) -> Tensor:
        """Adds IR operator @p op of @p operands (a float operand is the
        operator's literal). With @p result, the node's result: the
        compiler's inferred shape must be the traced one. Attributes: ints
        and lists of ints (dims, axis, start, end) and floats (eps, scale).
        @p dtype: the result's, when it is not the operands' (a comparison's
        bool, a cast's, where's)."""
        if op not in _BOOL_MOVES and op not in _BOOL_CONSUMERS and any(isinstance(o, Tensor) and o.dtype == torch.bool
                                         for o in operands):
            raise self.unsupported(f"a bool operand of {op}: the device has no bool, and takes "
                                   "a bool input only as the mask of masked_fill (made additive "
                                   "there)")
        tensors = [o for o in operands if isinstance(o, Tensor)]
        floats: Dict[str, float] = {}
        flags = list(flags)
        literals = [o for o in operands if not isinstance(o, Tensor)]
        if literals:
            # one literal of two operands, or where's false value
            if len(literals) != 1 or len(operands) != (3 if op == "where" else 2):
                raise self.unsupported(f"{op} of {len(literals)} literals")
            floats["scalar"] = float(literals[0])
            if not isinstance(operands[0], Tensor):
                flags.append("scalar_first")
        ints: Dict[str, List[int]] = {}
        for k, a in attrs.items():
            if isinstance(a, bool):
                raise TypeError(f"emit: boolean attribute {k}: pass it in flags")
            if isinstance(a, float):
                floats[k] = a
            elif isinstance(a, int):
                ints[k] = [a]
            else:
                ints[k] = [int(x) for x in a]
        want_dtype = tensors[0].dtype if tensors else torch.float32
        if dtype is None and result and self.node is not None \
                and isinstance(self.value(self.node), torch.Tensor):
            want_dtype = self.value(self.node).dtype
            if any(o.dtype != want_dtype for o in tensors):
                operands = [self._promoted(o, want_dtype, op) if isinstance(o, Tensor) else o
                            for o in operands]
                tensors = [o for o in operands if isinstance(o, Tensor)]
        name = self.fresh(self.node_hint(op))
        try:
            node = self.graph.add(op, name, [t.node for t in tensors], flags, ints, floats)
        except RuntimeError as e:
            # the compiler's reason (a broadcast it does not lower, ...)
            raise self.unsupported(str(e).splitlines()[0]) from e
        got = tuple(self.graph.shape(node))
        expected = tuple(shape) if shape is not None else (self.out_shape() if result else got)
        if not expected and self.scalar_results:
            expected = (1,)  # a 0-dimensional value is the IR's [1] (see scalar_results)
        if got != expected:
            raise RuntimeError(f"torch_neuronx: lowering {self.node}: the IR's {op} '{name}' is "
                               f"{list(got)}, the traced value {list(expected)}")
        self._emitted.append(name)
        if dtype is None:
            dtype = tensors[0].dtype if tensors else want_dtype
        return Tensor(node, name, got, dtype)

    def _promoted(self, o: Tensor, want: torch.dtype, op: str) -> Tensor:
        """Operand @p o of IR operator @p op, whose result is @p want, as
        PyTorch's type promotion computes it: a float operand of another
        float dtype converted to the result's (bfloat16 + float32 in
        float32, as autocast's mixed operators are), the one place the
        lowering converts dtypes within an operator."""
        if o.dtype == want or o.dtype == torch.bool and op in _BOOL_MOVES:
            return o
        if not (o.dtype.is_floating_point and want.is_floating_point):
            raise self.unsupported(f"a {o.dtype} operand of a {want} result (the device converts "
                                   "between float dtypes only)")
        return self.emit("cast", [o], result=False, shape=o.shape, dtype=want,
                         flags=[f"dtype={CAST_DTYPES[want]}"])

    def split(self, x: Tensor, axis: int, sizes: List[int]) -> List[Tensor]:
        names = [self.fresh(self.node_hint("split")) for _ in sizes]
        nodes = self.graph.split(names, x.node, axis, sizes)
        self._emitted.extend(names)
        return [Tensor(n, name, tuple(self.graph.shape(n)), x.dtype)
                for n, name in zip(nodes, names)]

    def bind(self, v: Any) -> None:
        """The node being lowered stands for @p v."""
        assert self.node is not None
        self.env[self.node] = v

    # --- nodes ---------------------------------------------------------------
    def lower_node(self, node: torch.fx.Node) -> None:
        """Lowers one operator node; raises UnsupportedOperatorError."""
        self.node = node
        self._emitted = []
        record = LOWERINGS.get(node.target)  # type: ignore[arg-type]
        if record is None:
            raise self.unsupported()
        for a in node.all_input_nodes:
            d = dtype_of(self.env.get(a))
            if d is not None and d != torch.bool and d not in record.dtypes:
                if d == torch.int32:
                    raise self.unsupported("an int32 operand (the device computes int32 in add, "
                                           "sub, mul and data movement only)")
                self.ir_dtype(d)
                raise self.unsupported(f"a {d} operand")
        record.fn(self, node)
        if node not in self.env:
            raise RuntimeError(f"torch_neuronx: the lowering of {node.target} bound no value")
        self.log.append(f"{operator_name(node.target)} at {call_site(node)}: "
                        f"{', '.join(self._emitted) or 'no IR'}")
        self.ir_nodes.update((name, node.name) for name in self._emitted)

    def fold(self, node: torch.fx.Node) -> bool:
        """Binds @p node to its traced value if it does not depend on the
        inputs or the parameters: built from buffers, constants and
        literals (attention masks from torch.ones and torch.triu, slices of
        a registered buffer, comparisons). Random operators (torch.rand,
        randn_like) are never folded: each call draws anew."""
        value = self.value(node)
        if not isinstance(value, torch.Tensor) or value.dim() == 0 and value.dtype == torch.bool:
            return False
        if torch.Tag.nondeterministic_seeded in getattr(node.target, "tags", ()):
            return False
        if node.target in _SHAPE_ONLY:
            self.env[node] = Weight(value, node.name)
            return True
        for a in node.all_input_nodes:
            v = self.env.get(a)
            if not isinstance(v, Weight) or v.parameter:
                return False
        self.env[node] = Weight(value, node.name)
        return True

    def lower_getitem(self, node: torch.fx.Node) -> None:
        source, index = node.args
        v = self.env.get(source)  # type: ignore[arg-type]
        if isinstance(v, (list, tuple)) and isinstance(index, int) and index < len(v):
            if v[index] is not None:
                self.env[node] = v[index]
        elif isinstance(v, Weight):
            self.env[node] = Weight(self.value(node), node.name)

    def result(self, v: Any, taken: List[str]) -> Tensor:
        """@p v as an output of the IR graph: a value the program computes
        (an input or a repeated output is copied by a multiplication)."""
        t = self.tensor(v, "a result")
        if t.dtype == torch.bool and self.graph.dtype(t.node) != "u8":
            # a bool input, or data moved from one (comparisons' u8 masks
            # are returned as bool)
            raise RuntimeError("torch_neuronx.trace: the traced function returns a bool "
                               "tensor; the device has no bool (it takes bool inputs only "
                               "as the mask of masked_fill)")
        if t.name in taken or t.name in self.input_names:
            t = self.emit("mul", [t, 1.0], result=False)
        return t


def dtype_of(v: Any) -> Optional[torch.dtype]:
    if isinstance(v, (Tensor,)):
        return v.dtype
    if isinstance(v, (Weight, External)):
        return v.value.dtype
    if isinstance(v, (Expanded, Transposed)):
        return v.source.dtype
    if isinstance(v, Masked):
        return v.scores.dtype
    if isinstance(v, (list, tuple)):
        for item in v:
            d = dtype_of(item)
            if d is not None:
                return d
    return None
