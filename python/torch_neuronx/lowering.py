# SPDX-License-Identifier: MIT
"""Lowering of a frozen TorchScript graph (from torch.jit.trace) to the
compiler's IR text (docs/compiler.md). Weights become IR inputs that the op
library turns into program constants; every other tensor keeps the shape
and dtype it had when the graph ran on the example inputs."""

from __future__ import annotations

import math
import re
from pathlib import Path
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple, Union

import torch

IR_DTYPES: Dict[torch.dtype, str] = {
    torch.float32: "fp32",
    torch.bfloat16: "bf16",
    torch.float16: "fp16",
    torch.int32: "int32",
}

_IR_KEYWORDS = {"graph", "input", "const", "output"}

# torch's and this package's frames in a node's source range: the call
# site is the first frame outside them.
_SKIPPED_DIRS = (str(torch.__path__[0]), str(Path(__file__).resolve().parent))


class UnsupportedOperatorError(RuntimeError):
    """An operator (or a form of it) the neuron compiler does not lower."""

    def __init__(self, kind: str, site: str, reason: str) -> None:
        self.kind = kind
        self.site = site
        super().__init__(
            f"torch_neuronx.trace: {kind} is not supported on the neuron device"
            f"{': ' + reason if reason else ''} (called at {site}). To run the "
            "operators the device does not support on the CPU and the rest on the "
            "device, partition the graph: torch_neuronx.trace(..., "
            "partitioner_config=torch_neuronx.PartitionerConfig()); "
            "torch_neuronx.analyze(model, example_inputs) lists them all")
        self.reason = reason
        self.node_key: Optional[str] = None  # the node's, see node_key()


@dataclass(frozen=True)
class Tensor:
    """A tensor value of the IR."""
    name: str
    shape: Tuple[int, ...]
    dtype: torch.dtype


Operand = Union[Tensor, float]


@dataclass(frozen=True)
class Masked:
    """Attention scores under a causal mask (known when the model was
    traced): -inf, or a fill that torch's softmax turns into 0, where key
    k > query q on the last two axes. Only softmax takes them, lowered to
    the compiler's softmax(causal=true), which builds the mask on the
    device."""
    scores: Tensor


@dataclass(frozen=True)
class Expanded:
    """A device tensor broadcast by aten::expand and not materialised:
    @p source broadcast to @p shape, seen as @p view, which is @p shape or
    @p shape with its leading axes merged by a reshape (nn.MultiheadAttention
    expands a [B, 1, 1, K] key padding mask over the heads and views it as
    [B * H, 1, K]). Binary operators and baddbmm's mask take it as an
    operand that the device broadcasts."""
    source: Tensor
    shape: Tuple[int, ...]
    view: Tuple[int, ...]


@dataclass
class External:
    """A tensor computed outside the part of the graph being lowered (a graph
    input, or the result of an operator that runs on the CPU): an input of
    the IR graph from its first use on."""
    debug_name: str
    value: torch.Tensor  # its value in the example run
    lowered: Optional[Tensor] = None


@dataclass
class ExternalList:
    """A list of tensors computed outside the part being lowered."""
    debug_name: str


@dataclass
class Weight:
    """A tensor constant of the graph, an IR weight once an operator uses it."""
    value: torch.Tensor
    hint: str
    lowered: Optional[Tensor] = None


# Nodes that compute no tensor the device could: constants, lists and
# tuples of values, and sizes (fixed by the trace).
GLUE_KINDS = frozenset({
    "prim::Constant", "prim::ListConstruct", "prim::TupleConstruct", "prim::ListUnpack",
    "prim::TupleUnpack", "aten::size", "aten::Int", "aten::ScalarImplicit", "prim::NumToTensor",
})


def is_tensor_type(t: torch._C.JitType) -> bool:
    return isinstance(t, torch._C.TensorType)


def is_tensor_list_type(t: torch._C.JitType) -> bool:
    return isinstance(t, torch._C.ListType) and isinstance(t.getElementType(), torch._C.TensorType)


def is_operator(node: torch._C.Node) -> bool:
    """An operator of the model (counted by analyze, placed on the device or
    the CPU by the partitioner): a node computing a tensor or a list of them."""
    return node.kind() not in GLUE_KINDS and any(
        is_tensor_type(o.type()) or is_tensor_list_type(o.type()) for o in node.outputs())


def node_key(node: torch._C.Node) -> str:
    """A name for an operator node that stays the same in copies of the
    graph: the debug name of its first output."""
    return node.outputsAt(0).debugName()


def call_stack(node: torch._C.Node) -> str:
    """@p node's source range, innermost frame first, one frame a line."""
    return "".join(f + "\n" for f in node.sourceRange().splitlines() if f.strip())


def call_site(node: torch._C.Node) -> str:
    """The innermost frame of @p node's source range outside torch itself
    ("model.py(12): forward"), else its innermost frame."""
    frames = [f for f in node.sourceRange().splitlines() if f.strip()]
    for f in frames:
        if not f.startswith(_SKIPPED_DIRS):
            return f
    return frames[0] if frames else "<unknown location>"


@dataclass
class Lowered:
    ir: str
    weight_names: List[str]
    weights: List[torch.Tensor]
    inputs: List[str]
    outputs: List[str]
    tuple_output: bool  # the traced function returns a tuple
    log: List[str] = field(default_factory=list)
    # Positions of the bool inputs: the device takes them as fp32 0 and 1
    # (the caller's wrapper converts them, see BOOL_INPUT_DTYPE).
    bool_inputs: Tuple[int, ...] = ()


# The device has no bool: a bool input of the traced function is an fp32
# input of 0 and 1, which only masked_fill takes (as its mask).
BOOL_INPUT_DTYPE = torch.float32
_BOOL_MOVES = frozenset({"reshape", "transpose", "slice", "concat", "split"})


def probe(graph: torch._C.Graph, example_inputs: Sequence[torch.Tensor]) -> Dict[str, Any]:
    """Runs @p graph on @p example_inputs and returns every tensor and int
    value it computes, by debug name: the shapes and dtypes the lowering
    needs (the frozen graph's types do not carry them)."""
    g = graph.copy()
    self_input = list(g.inputs())[0]
    if isinstance(self_input.type(), torch._C.ClassType):
        if self_input.uses():
            raise RuntimeError("torch_neuronx.trace: the frozen graph still uses the module")
        g.eraseInput(0)
    # The copy's values, in the same order as the original's (debug names
    # may differ between the two).
    pairs = [(o, c) for n, m in zip(graph.nodes(), g.nodes())
             for o, c in zip(n.outputs(), m.outputs())
             if isinstance(o.type(), (torch._C.TensorType, torch._C.IntType))
             or is_tensor_list_type(o.type())]
    values = [c for _, c in pairs]
    while list(g.outputs()):
        g.eraseOutput(0)
    t = g.create("prim::TupleConstruct", values)
    g.appendNode(t)
    t.output().setType(torch._C.TupleType([v.type() for v in values]))
    g.registerOutput(t.output())
    fn = torch._C._create_function_from_graph("neuron_probe", g)
    with torch.no_grad():
        results = fn(*example_inputs)
    return {o.debugName(): r for (o, _), r in zip(pairs, results)}


class _Lowering:
    def __init__(self, graph: torch._C.Graph, probed: Dict[str, Any]) -> None:
        self.graph = graph
        self.probed = probed
        self.lines: List[str] = []
        self.env: Dict[str, Any] = {}  # debug name -> Tensor or a Python value
        self.names: Dict[str, int] = {}
        self.weight_names: List[str] = []
        self.weights: List[torch.Tensor] = []
        self.log: List[str] = []
        self.node: Optional[torch._C.Node] = None
        self.externals: List[External] = []  # in the order of the IR inputs

    # --- helpers ---------------------------------------------------------
    def fresh(self, hint: str) -> str:
        base = re.sub(r"[^A-Za-z0-9_]", "_", hint) or "v"
        if not (base[0].isalpha() or base[0] == "_"):
            base = "v_" + base
        if base in _IR_KEYWORDS:
            base += "_"
        n = self.names.get(base, 0)
        self.names[base] = n + 1
        return base if n == 0 else f"{base}_{n}"

    def node_hint(self, op: str) -> str:
        """The IR name an operator of the node being lowered gets: its module's
        path in the traced model and the IR operator ("fc1_matmul",
        "mlp_act_gelu"), or the operator alone outside any submodule
        ("softmax"). Profiles and the compiler's plan name instructions by
        it."""
        scope = self.node.scopeName() if self.node is not None else ""
        path = scope.split("/")[-1].removeprefix("__module").lstrip(".")
        return f"{path}_{op}" if path else op

    def unsupported(self, reason: str = "") -> UnsupportedOperatorError:
        assert self.node is not None
        e = UnsupportedOperatorError(self.node.kind(), call_site(self.node), reason)
        if self.node.outputsSize():
            e.node_key = node_key(self.node)
        return e

    def ir_type(self, shape: Sequence[int], dtype: torch.dtype) -> str:
        if dtype not in IR_DTYPES:
            if dtype == torch.int64:
                raise self.unsupported("dtype torch.int64 (the device's integers are int32: "
                                       "pass int32 tensors)")
            raise self.unsupported(f"dtype {dtype} (the device computes in "
                                   f"{', '.join(str(d) for d in IR_DTYPES)})")
        if len(shape) == 0:
            raise self.unsupported("a 0-dimensional tensor result")
        return f"{IR_DTYPES[dtype]}[{', '.join(str(int(s)) for s in shape)}]"

    def weight(self, value: torch.Tensor, hint: str) -> Tensor:
        name = self.fresh(hint)
        self.lines.append(f"input {name}: {self.ir_type(value.shape, value.dtype)}")
        self.weight_names.append(name)
        self.weights.append(value.detach().contiguous())
        return Tensor(name, tuple(value.shape), value.dtype)

    def tensor(self, v: Any, what: str) -> Tensor:
        if isinstance(v, External):
            if v.lowered is None:
                name = self.fresh(v.debug_name)
                self.lines.append(f"input {name}: {self.ir_type(v.value.shape, v.value.dtype)}")
                v.lowered = Tensor(name, tuple(v.value.shape), v.value.dtype)
                self.externals.append(v)
            return v.lowered
        if isinstance(v, Weight):
            if v.lowered is None:
                v.lowered = self.weight(v.value, v.hint)
            return v.lowered
        if isinstance(v, Masked):
            raise self.unsupported(f"{what} is causally masked and not the operand of a softmax "
                                   "(the device applies causal masks in softmax only)")
        if isinstance(v, Expanded):
            raise self.unsupported(f"{what} is a tensor expanded from {list(v.source.shape)} to "
                                   f"{list(v.view)}, which the device takes only as an operand "
                                   "of add, sub, mul, div or baddbmm's mask (it broadcasts it "
                                   "there instead of copying it)")
        if not isinstance(v, Tensor):
            raise self.unsupported(f"{what} must be a tensor, not {v!r}")
        return v

    def operand(self, v: Any) -> Operand:
        """A tensor or a literal: numbers and 0-dimensional constants."""
        if isinstance(v, Tensor):
            return v
        if isinstance(v, External):
            return self.tensor(v, "operand")
        if isinstance(v, Weight):
            return float(v.value) if v.value.dim() == 0 else self.tensor(v, "operand")
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            return float(v)
        raise self.unsupported(f"operand {v!r}")

    def emit(self, op: str, operands: Sequence[Operand], out: Optional[torch._C.Value] = None,
             **attrs: Any) -> Tensor:
        if op not in _BOOL_MOVES and any(isinstance(o, Tensor) and o.dtype == torch.bool
                                         for o in operands):
            raise self.unsupported(f"a bool operand of {op}: the device has no bool, and takes "
                                   "a bool input only as the mask of masked_fill (made additive "
                                   "there)")
        args = [o.name if isinstance(o, Tensor) else repr(float(o)) for o in operands]
        for k, a in attrs.items():
            if isinstance(a, bool):
                args.append(f"{k}={'true' if a else 'false'}")
            elif isinstance(a, (list, tuple)):
                args.append(f"{k}=[{', '.join(str(int(x)) for x in a)}]")
            else:
                args.append(f"{k}={a}")
        if out is not None:
            want = self.probed[out.debugName()].dtype
            for o in operands:
                if isinstance(o, Tensor) and o.dtype != want:
                    raise self.unsupported(f"a {o.dtype} operand of a {want} result (the "
                                           "device does not convert dtypes)")
        name = self.fresh(self.node_hint(op))
        self.lines.append(f"{name} = {op}({', '.join(args)})")
        if out is not None:
            r = self.probed[out.debugName()]
            result = Tensor(name, tuple(r.shape), r.dtype)
            self.env[out.debugName()] = result
            return result
        first = next(o for o in operands if isinstance(o, Tensor))
        return Tensor(name, first.shape, first.dtype)

    def bind(self, out: torch._C.Value, t: Tensor) -> None:
        self.env[out.debugName()] = t

    def arg(self, i: int) -> Any:
        assert self.node is not None
        name = list(self.node.inputs())[i].debugName()
        if name not in self.env:
            raise self.unsupported(f"input {i} (%{name}) has no value the device can use")
        return self.env[name]

    def out(self) -> torch._C.Value:
        assert self.node is not None
        return self.node.output()

    def dim(self, t: Tensor, d: int) -> int:
        return d + len(t.shape) if d < 0 else d

    # --- the graph -------------------------------------------------------
    def run(self, name: str, example_inputs: Sequence[torch.Tensor]) -> Lowered:
        self.lines.append(f"graph {self.fresh(name)}")
        inputs: List[str] = []
        graph_inputs = [v for v in self.graph.inputs()
                        if not isinstance(v.type(), torch._C.ClassType)]
        bool_inputs: List[int] = []
        for i, (v, x) in enumerate(zip(graph_inputs, example_inputs)):
            self.node = v.node()
            name = self.fresh(v.debugName())
            if x.dtype == torch.bool:
                bool_inputs.append(i)
            ir_dtype = BOOL_INPUT_DTYPE if x.dtype == torch.bool else x.dtype
            self.lines.append(f"input {name}: {self.ir_type(x.shape, ir_dtype)}")
            self.env[v.debugName()] = Tensor(name, tuple(x.shape), x.dtype)
            inputs.append(name)
        for n in self.graph.nodes():
            self.node = n
            before = len(self.lines)
            self.lower(n)
            self.log.append(f"{n.kind()} at {call_site(n)}: "
                            f"{'; '.join(self.lines[before:]) or 'no IR'}")
        outputs, tuple_output = self.outputs(inputs)
        self.lines.append(f"output {', '.join(outputs)}")
        return Lowered("\n".join(self.lines) + "\n", self.weight_names, self.weights,
                       inputs, outputs, tuple_output, self.log, tuple(bool_inputs))

    # --- parts of the graph (the partitioner) -----------------------------
    def bind_inputs_as_externals(self, example_inputs: Sequence[torch.Tensor]) -> None:
        graph_inputs = [v for v in self.graph.inputs()
                        if not isinstance(v.type(), torch._C.ClassType)]
        for v, x in zip(graph_inputs, example_inputs):
            self.env[v.debugName()] = External(v.debugName(), x)

    def bind_outside(self, n: torch._C.Node) -> None:
        """The results of @p n, an operator outside the part being lowered."""
        for o in n.outputs():
            name = o.debugName()
            r = self.probed.get(name)
            if is_tensor_type(o.type()) and isinstance(r, torch.Tensor):
                self.env[name] = External(name, r)
            elif is_tensor_list_type(o.type()):
                self.env[name] = ExternalList(name)
            elif r is not None and not isinstance(r, torch.Tensor):
                self.env[name] = r
            else:
                self.env.pop(name, None)

    def lower_glue(self, n: torch._C.Node) -> None:
        """Constants, lists and sizes; a value that cannot be known here
        (e.g. a list of CPU results' sizes) stays unbound, and an operator
        that uses it is not supported."""
        try:
            self.lower(n)
        except (UnsupportedOperatorError, KeyError):
            for o in n.outputs():
                self.env.pop(o.debugName(), None)

    def classify(self, example_inputs: Sequence[torch.Tensor],
                 to_cpu: frozenset) -> Dict[str, Tuple[torch._C.Node, Optional[UnsupportedOperatorError]]]:
        """Whether each operator lowers, its inputs being the device's or
        the CPU's as they come: by node key, the node and None, or the
        reason it does not. @p to_cpu: node keys or kinds kept on the CPU."""
        self.bind_inputs_as_externals(example_inputs)
        result: Dict[str, Tuple[torch._C.Node, Optional[UnsupportedOperatorError]]] = {}
        for n in self.graph.nodes():
            self.node = n
            if not is_operator(n):
                self.lower_glue(n)
                continue
            try:
                if n.kind() in to_cpu or node_key(n) in to_cpu:
                    raise self.unsupported("kept on the CPU (PartitionerConfig.ops_to_partition)")
                self.lower(n)
                result[node_key(n)] = (n, None)
            except UnsupportedOperatorError as e:
                result[node_key(n)] = (n, e)
                self.bind_outside(n)
        return result

    def run_part(self, name: str, example_inputs: Sequence[torch.Tensor], members: frozenset,
                 outputs: Sequence[str]) -> Tuple[Lowered, List[str]]:
        """Lowers the operators whose node keys are @p members into the IR
        graph @p name, whose outputs are the values @p outputs (by debug
        name); every other tensor they use is an input. Returns the lowered
        graph and the debug names of its inputs, in order."""
        self.lines.append(f"graph {self.fresh(name)}")
        self.bind_inputs_as_externals(example_inputs)
        last: Optional[torch._C.Node] = None
        for n in self.graph.nodes():
            self.node = n
            if not is_operator(n):
                self.lower_glue(n)
            elif node_key(n) in members:
                before = len(self.lines)
                self.lower(n)
                self.log.append(f"{n.kind()} at {call_site(n)}: "
                                f"{'; '.join(self.lines[before:]) or 'no IR'}")
                last = n
            else:
                self.bind_outside(n)
        self.node = last
        names: List[str] = []
        for debug in outputs:
            t = self.tensor(self.env[debug], "a result")
            if (t.name in names or t.name in self.weight_names
                    or any(e.lowered is t for e in self.externals)):
                t = self.emit("mul", [t, 1.0])  # an output the program computes
            names.append(t.name)
        self.lines.append(f"output {', '.join(names)}")
        inputs = [e.lowered.name for e in self.externals if e.lowered is not None]
        lowered = Lowered("\n".join(self.lines) + "\n", self.weight_names, self.weights,
                          inputs, names, False, self.log)
        return lowered, [e.debug_name for e in self.externals]

    def outputs(self, inputs: List[str]) -> Tuple[List[str], bool]:
        ret = list(self.graph.outputs())
        assert len(ret) == 1
        v = self.env[ret[0].debugName()]
        values = list(v) if isinstance(v, tuple) else [v]
        names: List[str] = []
        for t in values:
            if not isinstance(t, Tensor):
                raise RuntimeError(f"torch_neuronx.trace: the traced function returns {t!r}; "
                                   "only tensors (or a tuple of tensors) are supported")
            if t.dtype == torch.bool:
                raise RuntimeError("torch_neuronx.trace: the traced function returns a bool "
                                   "tensor; the device has no bool (it takes bool inputs only "
                                   "as the mask of masked_fill)")
            if t.name in inputs or t.name in self.weight_names or t.name in names:
                # An output must be a value the program computes.
                t = self.emit("mul", [t, 1.0])
            names.append(t.name)
        return names, isinstance(v, tuple)

    def lower(self, n: torch._C.Node) -> None:
        kind = n.kind()
        if kind == "prim::Constant":
            out = n.output()
            value = out.toIValue()
            self.env[out.debugName()] = (Weight(value, out.debugName())
                                         if isinstance(value, torch.Tensor) else value)
            return
        if kind in ("prim::ListConstruct", "prim::TupleConstruct"):
            items = [self.env[i.debugName()] for i in n.inputs()]
            self.env[n.output().debugName()] = items if kind == "prim::ListConstruct" else tuple(items)
            return
        if kind in ("prim::ListUnpack", "prim::TupleUnpack"):
            items = self.env[n.input().debugName()]
            if isinstance(items, ExternalList):
                # The pieces of a list computed on the CPU: each its own input.
                items = [External(o.debugName(), self.probed[o.debugName()]) for o in n.outputs()]
            for o, item in zip(n.outputs(), items):
                self.env[o.debugName()] = item
            return
        if kind in ("aten::size", "aten::Int", "aten::ScalarImplicit", "prim::NumToTensor"):
            # Shapes are fixed by the trace (the call checks them): these
            # are the values of the example run.
            r = self.probed.get(n.output().debugName())
            if r is None:
                raise self.unsupported("a size computed at run time")
            self.env[n.output().debugName()] = r.item() if isinstance(r, torch.Tensor) else r
            return
        if self._fold(n):
            return
        handler = _HANDLERS.get(kind)
        if handler is None:
            raise self.unsupported()
        if kind not in _INT32_OPERATORS and any(
                self._dtype_of(self.env.get(v.debugName())) == torch.int32 for v in n.inputs()):
            raise self.unsupported("an int32 operand (the device computes int32 in add, sub, "
                                   "mul and data movement only)")
        handler(self)

    def _fold(self, n: torch._C.Node) -> bool:
        """Computes @p n when the model is traced if its value does not
        depend on the inputs: an operator of _FOLDED_KINDS whose operands
        are constants (weights, numbers, sizes) and whose result is a
        tensor of rank >= 1 (attention masks built from torch.ones,
        torch.triu, slices of a registered buffer, comparisons). Its value
        is the example run's, a constant like a weight."""
        if n.kind() not in _FOLDED_KINDS:
            return False
        if any(v.debugName() not in self.env for v in n.inputs()):
            return False
        for v in (self.env[v.debugName()] for v in n.inputs()):
            if n.kind() in _SHAPE_ONLY_KINDS:
                break  # its value depends on the operand's shape alone
            items = v if isinstance(v, (list, tuple)) else [v]
            if any(isinstance(i, (Tensor, External, ExternalList, Masked, Expanded))
                   for i in items):
                return False
        r = self.probed.get(n.output().debugName()) if n.outputsSize() == 1 else None
        if not isinstance(r, torch.Tensor) or r.dim() == 0:
            return False
        self.env[n.output().debugName()] = Weight(r, n.output().debugName())
        return True

    @staticmethod
    def _dtype_of(v: Any) -> Optional[torch.dtype]:
        if isinstance(v, (Tensor, External)):
            return v.dtype if isinstance(v, Tensor) else v.value.dtype
        if isinstance(v, Weight):
            return v.value.dtype
        if isinstance(v, (list, tuple)):
            for item in v:
                d = _Lowering._dtype_of(item)
                if d is not None:
                    return d
        return None


# --- operators ----------------------------------------------------------------

def _linear(L: _Lowering) -> None:
    x, w, b = L.tensor(L.arg(0), "input"), L.tensor(L.arg(1), "weight"), L.arg(2)
    if len(w.shape) != 2:
        raise L.unsupported("a weight of rank other than 2")
    if len(x.shape) < 2:
        raise L.unsupported("a 1-dimensional input (the device's matmul takes rank >= 2)")
    if b is None:
        L.emit("matmul", [x, w], L.out(), transpose_b=True)
        return
    h = L.emit("matmul", [x, w], transpose_b=True)
    h = Tensor(h.name, tuple(L.probed[L.out().debugName()].shape), x.dtype)
    L.emit("add", [h, L.tensor(b, "bias")], L.out())


def _matmul(L: _Lowering) -> None:
    a, b = L.tensor(L.arg(0), "self"), L.tensor(L.arg(1), "other")
    if len(a.shape) < 2 or len(b.shape) < 2:
        raise L.unsupported("a 1-dimensional operand")
    L.emit("matmul", [a, b], L.out())


def _binary(op: str) -> Callable[[_Lowering], None]:
    def lower(L: _Lowering) -> None:
        n_in = len(list(L.node.inputs()))  # type: ignore[union-attr]
        if isinstance(L.arg(0), Expanded) or isinstance(L.arg(1), Expanded):
            if op in ("add", "sub") and n_in > 2 and L.arg(2) != 1:
                raise L.unsupported(f"alpha={L.arg(2)!r} with an expanded operand")
            _broadcast_binary(L, op, L.arg(0), L.arg(1))
            return
        a, b = L.operand(L.arg(0)), L.operand(L.arg(1))
        if not isinstance(a, Tensor) and not isinstance(b, Tensor):
            # Arithmetic on sizes (head_dim = embed_dim // heads): fixed by
            # the trace, its value is the example run's.
            L.env[L.out().debugName()] = L.probed[L.out().debugName()].item()
            return
        if op in ("add", "sub") and n_in > 2:
            alpha = L.arg(2)
            if alpha != 1:
                b = b * alpha if isinstance(b, float) else L.emit("mul", [b, float(alpha)])
        if op == "div" and n_in > 2 and L.arg(2) is not None:
            raise L.unsupported(f"rounding_mode={L.arg(2)!r}")
        L.emit(op, [a, b], L.out())
    return lower


def _broadcast_binary(L: _Lowering, op: str, a: Any, b: Any) -> None:
    """@p op of @p a and @p b, one of them Expanded, into the node's
    result: the other operand has the result's shape, and the expanded one
    is broadcast by the device from its source. A view that merged leading
    axes is undone on the other operand for the operation and redone on
    the result (reshapes are free in the row layout)."""
    e, y = (a, b) if isinstance(a, Expanded) else (b, a)
    y = L.tensor(y, "the other operand")
    out = tuple(L.probed[L.out().debugName()].shape)
    if y.shape != out:
        raise L.unsupported(f"an operand expanded to {list(e.view)} with another of shape "
                            f"{list(y.shape)}: the device broadcasts only the expanded one, "
                            f"so the other must have the result's shape {list(out)}")
    merged = len(e.shape) - len(e.view) + 1
    if merged > 1 and (len(y.shape) != len(e.view) or y.shape[0] != e.view[0]):
        raise L.unsupported(f"an operand expanded to {list(e.shape)} and viewed as "
                            f"{list(e.view)} with another of shape {list(y.shape)}: the device "
                            "splits the other's first axis as the view merged them, so it must "
                            f"have the view's rank and first axis ({e.view[0]})")
    unmerged = tuple(e.shape[:merged]) + y.shape[1:]
    if merged > 1:
        y = L.emit("reshape", [y], shape=list(unmerged))
        y = Tensor(y.name, unmerged, y.dtype)
    operands = [e.source, y] if e is a else [y, e.source]
    if merged == 1:
        L.emit(op, operands, L.out())
        return
    r = L.emit(op, operands)
    L.emit("reshape", [Tensor(r.name, unmerged, r.dtype)], L.out(), shape=list(out))


def _expand(L: _Lowering) -> None:
    # x.expand(sizes): a broadcast the device does in the operator that
    # uses it (see Expanded); constants are folded when traced.
    x = L.tensor(L.arg(0), "self")
    shape = tuple(L.probed[L.out().debugName()].shape)
    if shape == x.shape:
        L.bind(L.out(), x)
        return
    L.env[L.out().debugName()] = Expanded(x, shape, shape)


def _floor_divide(L: _Lowering) -> None:
    # C // heads on sizes: fixed by the trace, the example run's value
    if any(isinstance(L.operand(L.arg(i)), Tensor) for i in (0, 1)):
        raise L.unsupported("floor division of a tensor")
    L.env[L.out().debugName()] = L.probed[L.out().debugName()].item()


def _rsub(L: _Lowering) -> None:
    a, b = L.operand(L.arg(0)), L.operand(L.arg(1))
    alpha = L.arg(2)
    if alpha != 1:
        a = a * alpha if isinstance(a, float) else L.emit("mul", [a, float(alpha)])
    L.emit("sub", [b, a], L.out())


def _unary(op: str) -> Callable[[_Lowering], None]:
    def lower(L: _Lowering) -> None:
        L.emit(op, [L.tensor(L.arg(0), "self")], L.out())
    return lower


def _gelu(L: _Lowering) -> None:
    approximate = L.arg(1)
    ops = {"none": "gelu", "tanh": "gelu_tanh"}
    if approximate not in ops:
        raise L.unsupported(f"approximate={approximate!r}")
    L.emit(ops[approximate], [L.tensor(L.arg(0), "self")], L.out())


def _softmax(L: _Lowering) -> None:
    masked = L.arg(0)
    x = masked.scores if isinstance(masked, Masked) else L.tensor(masked, "self")
    if L.dim(x, L.arg(1)) != len(x.shape) - 1:
        raise L.unsupported("softmax over an axis other than the last")
    if L.arg(2) is not None and L.arg(2) != x.dtype:
        raise L.unsupported(f"softmax with dtype={L.arg(2)}")
    if isinstance(masked, Masked):
        L.emit("softmax", [x], L.out(), axis=-1, causal=True)
    else:
        L.emit("softmax", [x], L.out(), axis=-1)


# A masked score's fill: -inf, or a finite value at most this (HF's GPT-2
# fills with -1e4, others with torch.finfo(dtype).min). torch's softmax
# gives such a score exactly 0, as the device's causal softmax does, as
# long as the row's largest score exceeds fill + 104 (exp underflows to 0
# in fp32 below -103.97).
MASK_FILL_MAX = -1e4


def causal_keep(shape: Sequence[int], keep: torch.Tensor) -> bool:
    """Whether @p keep, broadcast to @p shape, is True exactly where key
    k <= query q on the last two axes ([.., Q, K]): a causal mask."""
    if len(shape) < 2 or keep.dtype != torch.bool:
        return False
    try:
        b = torch.broadcast_to(keep, tuple(shape))
    except RuntimeError:
        return False
    pattern = torch.ones(shape[-2], shape[-1], dtype=torch.bool).tril()
    return bool(torch.equal(b, pattern.expand(tuple(shape))))


def _fill_value(v: Any) -> Optional[float]:
    """A masked_fill's or where's fill: a number or a 0-dimensional constant."""
    if isinstance(v, Weight) and v.value.dim() == 0:
        return float(v.value)
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        return float(v)
    return None


def _masks_causally(fill: Optional[float]) -> bool:
    return fill is not None and fill <= MASK_FILL_MAX


def _additive_causal(shape: Sequence[int], mask: Any) -> bool:
    """Whether @p mask is a constant additive causal mask for scores of
    @p shape: 0 where k <= q, -inf (or at most MASK_FILL_MAX) elsewhere."""
    if not isinstance(mask, Weight) or not mask.value.is_floating_point():
        return False
    m = mask.value
    if not causal_keep(shape, m == 0):
        return False
    masked = m[m != 0]
    return bool((masked <= MASK_FILL_MAX).all())


_MASK_HINT = ("only a causal mask known when the model is traced is lowered (built from "
              "constants and sizes, e.g. torch.triu(torch.ones(T, T), 1) or a registered "
              "buffer), as softmax(causal=true)")


def _shape_of(v: Any) -> Optional[Tuple[int, ...]]:
    """The shape of a tensor operand as the trace fixed it, else None."""
    if isinstance(v, Tensor):
        return v.shape
    if isinstance(v, (External, Weight)):
        return tuple(v.value.shape)
    if isinstance(v, Expanded):
        return v.view
    return None


def _check_mask_shape(L: _Lowering, mask: Sequence[int], scores: Sequence[int], what: str) -> None:
    """Refuses an additive attention mask of shape @p mask that the device
    does not add to scores of shape @p scores ([.., Q, K]), naming both
    shapes and why, before anything is compiled. torch has checked, when
    the model was traced, that the mask broadcasts to the scores; the
    device broadcasts it over the keys (a last axis of 1) only as one
    value for all the scores or one per row of them."""
    m, sc = [int(d) for d in mask], [int(d) for d in scores]
    lead = [1] * (len(sc) - len(m)) + m[:-1]
    if m and m[-1] != sc[-1] and math.prod(m) != 1 and lead != sc[:-1]:
        raise L.unsupported(
            f"{what} of shape {m} against attention scores of shape {sc}: it is broadcast over "
            f"the {sc[-1]} keys (its last axis is 1), which the device adds only as one value "
            f"for all the scores or one per row of them ({sc[:-1] + [1]}); give the mask the "
            f"keys' axis ([..., {sc[-1]}])")


def _require_causal_fill(L: _Lowering, fill: Optional[float]) -> None:
    """Refuses a masking op whose fill (argument 2) would not hide a key."""
    if not _masks_causally(fill):
        raise L.unsupported(f"a fill of {L.arg(2)!r} (a causal mask fills with -inf or a "
                            f"value <= {MASK_FILL_MAX:g})")


def _is_bool_input(v: Any) -> bool:
    src = v.source if isinstance(v, Expanded) else v
    return isinstance(src, Tensor) and src.dtype == torch.bool


def _additive_from_bool(L: _Lowering) -> None:
    """zeros.masked_fill(mask, fill) with @p mask from a bool input (fp32 0
    and 1 on the device): mask * fill, the mask made additive, as
    nn.MultiheadAttention makes a bool key_padding_mask. An infinite fill
    is the dtype's largest value times 2, which overflows to exactly -inf
    (or inf) where the mask is 1 and leaves -0 (or 0) where it is 0; a
    product with the infinity itself would be NaN there."""
    x, mask, fill = L.arg(0), L.arg(1), _fill_value(L.arg(2))
    if not isinstance(x, Weight) or bool(x.value.count_nonzero()):
        raise L.unsupported("masked_fill of a tensor other than zeros by a mask from the inputs "
                            "(the device makes such a mask additive: zeros filled where it is "
                            "True, e.g. torch.zeros_like(m, dtype=torch.float).masked_fill_(m, "
                            "float('-inf')))")
    if x.value.dtype != BOOL_INPUT_DTYPE:
        raise L.unsupported(f"a {x.value.dtype} fill of a bool input's mask (the device takes "
                            f"bool inputs as {BOOL_INPUT_DTYPE} 0 and 1)")
    if fill is None or math.isnan(fill):
        raise L.unsupported(f"a fill of {L.arg(2)!r} (a number is needed)")
    src = mask.source if isinstance(mask, Expanded) else mask
    m = Tensor(src.name, src.shape, BOOL_INPUT_DTYPE)  # the same IR value, read as 0 and 1
    if math.isinf(fill):
        largest = float(torch.finfo(BOOL_INPUT_DTYPE).max)
        m = L.emit("mul", [m, math.copysign(largest, fill)])
        m = L.emit("mul", [m, 2.0])
    else:
        m = L.emit("mul", [m, fill])
    out = tuple(L.probed[L.out().debugName()].shape)
    if isinstance(mask, Expanded):
        L.env[L.out().debugName()] = Expanded(m, mask.shape, mask.view)
    elif m.shape != out:
        L.env[L.out().debugName()] = Expanded(m, out, out)
    else:
        L.bind(L.out(), m)


def _masked_fill(L: _Lowering) -> None:
    if _is_bool_input(L.arg(1)):
        _additive_from_bool(L)
        return
    x = L.tensor(L.arg(0), "self")
    mask, fill = L.arg(1), _fill_value(L.arg(2))
    if not isinstance(mask, Weight):
        raise L.unsupported(f"a mask computed from the inputs ({_MASK_HINT})")
    if mask.value.dtype != torch.bool or not causal_keep(x.shape, ~mask.value):
        raise L.unsupported(f"a mask other than the causal one ({_MASK_HINT})")
    _require_causal_fill(L, fill)
    L.env[L.out().debugName()] = Masked(x)


def _where(L: _Lowering) -> None:
    cond, x, fill = L.arg(0), L.arg(1), _fill_value(L.arg(2))
    if not isinstance(x, (Tensor, External)):
        raise L.unsupported("a select whose kept value is not a tensor of the device")
    x = L.tensor(x, "self")
    if not isinstance(cond, Weight) or not causal_keep(x.shape, cond.value):
        raise L.unsupported(f"a condition other than the causal mask ({_MASK_HINT})")
    _require_causal_fill(L, fill)
    L.env[L.out().debugName()] = Masked(x)


def _add(L: _Lowering) -> None:
    # scores + a constant additive causal mask (nn.Transformer's
    # generate_square_subsequent_mask): the softmax after it is causal.
    a, b = L.arg(0), L.arg(1)
    alpha = L.arg(2) if len(list(L.node.inputs())) > 2 else 1  # type: ignore[union-attr]
    for x, m in ((a, b), (b, a)):
        if isinstance(x, (Tensor, External)) and alpha == 1:
            t = L.tensor(x, "self")
            if _additive_causal(L.probed[L.out().debugName()].shape, m) and \
                    tuple(L.probed[L.out().debugName()].shape) == t.shape:
                L.env[L.out().debugName()] = Masked(t)
                return
    _binary("add")(L)


def _baddbmm(L: _Lowering) -> None:
    # beta * self + alpha * (batch1 @ batch2): nn.MultiheadAttention's
    # scores with an attention mask.
    mask, a, b = L.arg(0), L.tensor(L.arg(1), "batch1"), L.tensor(L.arg(2), "batch2")
    beta, alpha = L.arg(3), L.arg(4)
    if len(a.shape) != 3 or len(b.shape) != 3:
        raise L.unsupported("baddbmm of operands of rank other than 3")
    out = L.probed[L.out().debugName()]
    mask_shape = _shape_of(mask)
    if beta != 0 and mask_shape is not None:
        _check_mask_shape(L, mask_shape, out.shape, "the mask (baddbmm's self)")
    h = L.emit("matmul", [a, b])
    h = Tensor(h.name, tuple(out.shape), a.dtype)
    if alpha != 1:
        h = L.emit("mul", [h, float(alpha)])
    if beta == 1 and _additive_causal(out.shape, mask):
        L.env[L.out().debugName()] = Masked(h)
        return
    if beta == 0:
        L.bind(L.out(), h)
        return
    if isinstance(mask, Expanded):
        if beta != 1:
            raise L.unsupported(f"beta={beta!r} with an expanded mask")
        _broadcast_binary(L, "add", h, mask)
        return
    m = L.tensor(mask, "self")
    if beta != 1:
        m = L.emit("mul", [m, float(beta)])
    L.emit("add", [h, m], L.out())


def _scaled_dot_product_attention(L: _Lowering) -> None:
    # torch 1.13's torch._C._nn._scaled_dot_product_attention(q, k, v,
    # attn_mask, dropout_p, need_attn_weights, is_causal): softmax(q k^T /
    # sqrt(E) [+ mask]) v; a bool mask is True where a key takes part.
    # One attention node of the IR, unless the attention weights are used:
    # they are the softmax of the decomposition, which the node hides, and
    # the bridge writes out the node's own decomposition (docs/compiler.md):
    # the scores scaled by the same 1/sqrt(E) as the node's scale, so that
    # both forms round alike.
    q, k, v = (L.tensor(L.arg(i), n) for i, n in enumerate(("query", "key", "value")))
    mask, dropout_p, is_causal = L.arg(3), L.arg(4), L.arg(6)
    if dropout_p:
        raise L.unsupported(f"dropout_p={dropout_p} (trace the model in eval mode)")
    if len(q.shape) < 2 or len(k.shape) != len(q.shape) or q.shape[:-2] != k.shape[:-2]:
        raise L.unsupported("query and key of different batch dimensions")
    if v.shape[:-1] != k.shape[:-1]:
        raise L.unsupported(f"value of shape {list(v.shape)} for key of shape {list(k.shape)} "
                            "(the same batch dimensions and keys)")
    outs = list(L.node.outputs())  # type: ignore[union-attr]
    w = L.probed.get(outs[1].debugName())
    shape = tuple(q.shape[:-1]) + (k.shape[-2],)
    causal = bool(is_causal)
    additive: Optional[Tensor] = None
    if mask is not None and not causal:
        if isinstance(mask, Weight) and mask.value.dtype == torch.bool:
            if not causal_keep(shape, mask.value):
                raise L.unsupported(f"a mask other than the causal one ({_MASK_HINT})")
            causal = True
        elif _additive_causal(shape, mask):
            causal = True
        else:
            mask_shape = _shape_of(mask)
            if mask_shape is not None:
                _check_mask_shape(L, mask_shape, shape, "attn_mask")
            additive = L.tensor(mask, "attn_mask")
    elif mask is not None:
        raise L.unsupported("is_causal together with an attn_mask")
    scale = 1.0 / float(q.shape[-1]) ** 0.5
    weights_used = (isinstance(w, torch.Tensor) and tuple(w.shape) == shape
                    and bool(outs[1].uses()))
    if not weights_used:
        L.emit("attention", [q, k, v] + ([additive] if additive is not None else []), outs[0],
               causal=causal, scale=repr(scale))
        return
    s = L.emit("matmul", [q, k], transpose_b=True)
    s = Tensor(s.name, shape, q.dtype)
    s = L.emit("mul", [s, scale])
    if additive is not None:
        s = L.emit("add", [s, additive])
    p = L.emit("softmax", [s], axis=-1, causal=True) if causal else \
        L.emit("softmax", [s], axis=-1)
    p = Tensor(p.name, shape, q.dtype)
    L.bind(outs[1], p)
    L.emit("matmul", [p, v], outs[0])


def _layer_norm(L: _Lowering) -> None:
    x, shape, w, b, eps = (L.tensor(L.arg(0), "input"), L.arg(1), L.arg(2), L.arg(3), L.arg(4))
    if list(shape) != [x.shape[-1]]:
        raise L.unsupported(f"normalized_shape {list(shape)} (only the last axis, "
                            f"[{x.shape[-1]}], is lowered)")
    if (w is None) != (b is None):
        raise L.unsupported("a weight without a bias or a bias without a weight")
    operands: List[Operand] = [x]
    if w is not None:
        operands += [L.tensor(w, "weight"), L.tensor(b, "bias")]
    L.emit("layer_norm", operands, L.out(), eps=repr(float(eps)))


def _reshape(L: _Lowering) -> None:
    # view, reshape, flatten, squeeze, unsqueeze: the traced result's shape.
    e = L.arg(0)
    if isinstance(e, Expanded):
        new = tuple(L.probed[L.out().debugName()].shape)
        for merged in range(1, len(e.shape) + 1):
            if (math.prod(e.shape[:merged]),) + e.shape[merged:] == new:
                L.env[L.out().debugName()] = Expanded(e.source, e.shape, new)
                return
        raise L.unsupported(f"a reshape of a tensor expanded to {list(e.shape)} into "
                            f"{list(new)}: only merging its leading axes is lowered")
    x = L.tensor(L.arg(0), "self")
    L.emit("reshape", [x], L.out(), shape=list(L.probed[L.out().debugName()].shape))


def _identity(L: _Lowering) -> None:
    L.bind(L.out(), L.tensor(L.arg(0), "self"))


def _dropout(L: _Lowering) -> None:
    if L.arg(2):
        raise L.unsupported("dropout in training mode (trace the model in eval mode)")
    _identity(L)


def _permute(L: _Lowering, perm: List[int]) -> None:
    x = L.tensor(L.arg(0), "self")
    if perm == list(range(len(x.shape))):
        L.bind(L.out(), x)
        return
    L.emit("transpose", [x], L.out(), perm=perm)


def _transpose(L: _Lowering) -> None:
    x = L.tensor(L.arg(0), "self")
    perm = list(range(len(x.shape)))
    a, b = L.dim(x, L.arg(1)), L.dim(x, L.arg(2))
    perm[a], perm[b] = perm[b], perm[a]
    _permute(L, perm)


def _t(L: _Lowering) -> None:
    x = L.tensor(L.arg(0), "self")
    _permute(L, list(reversed(range(len(x.shape)))))


def _permute_op(L: _Lowering) -> None:
    x = L.tensor(L.arg(0), "self")
    _permute(L, [L.dim(x, d) for d in L.arg(1)])


def _slice(L: _Lowering) -> None:
    x = L.tensor(L.arg(0), "self")
    axis = L.dim(x, L.arg(1))
    size = x.shape[axis]
    start, end, step = L.arg(2), L.arg(3), L.arg(4)
    if step != 1:
        raise L.unsupported(f"a slice with step {step}")
    start = 0 if start is None else (start + size if start < 0 else min(start, size))
    end = size if end is None else (end + size if end < 0 else min(end, size))
    if start == 0 and end == size:
        L.bind(L.out(), x)
        return
    L.emit("slice", [x], L.out(), axis=axis, start=start, end=end)


def _split_pieces(L: _Lowering, x: Tensor, axis: int, sizes: List[int]) -> None:
    """The list of tensors that @p x cut along @p axis into pieces of
    @p sizes is: one IR split, a value per piece."""
    names = [L.fresh(L.node_hint("split")) for _ in sizes]
    L.lines.append(f"{', '.join(names)} = split({x.name}, axis={axis}, "
                   f"sizes=[{', '.join(str(n) for n in sizes)}])")
    parts = []
    for name, n in zip(names, sizes):
        shape = list(x.shape)
        shape[axis] = n
        parts.append(Tensor(name, tuple(shape), x.dtype))
    L.env[L.out().debugName()] = parts


def _equal_pieces(size: int, piece: int) -> List[int]:
    """torch.split(size): pieces of @p piece elements, the last one shorter."""
    return [min(piece, size - start) for start in range(0, size, piece)]


def _chunk(L: _Lowering) -> None:
    # torch.chunk(x, chunks, dim): ceil(size / chunks) per piece, so maybe
    # fewer pieces than chunks
    x = L.tensor(L.arg(0), "self")
    axis = L.dim(x, L.arg(2))
    size, chunks = x.shape[axis], L.arg(1)
    _split_pieces(L, x, axis, _equal_pieces(size, -(-size // chunks)))


def _split(L: _Lowering) -> None:
    # tensor.split(size, dim): pieces of size elements, the last one shorter;
    # split(sizes, dim) with a list is split_with_sizes
    x = L.tensor(L.arg(0), "self")
    size, axis = L.arg(1), L.dim(x, L.arg(2))
    if isinstance(size, int):
        _split_pieces(L, x, axis, _equal_pieces(x.shape[axis], size))
    else:
        _split_pieces(L, x, axis, [int(n) for n in size])


def _split_with_sizes(L: _Lowering) -> None:
    x = L.tensor(L.arg(0), "self")
    _split_pieces(L, x, L.dim(x, L.arg(2)), [int(n) for n in L.arg(1)])


def _cat(L: _Lowering) -> None:
    parts = [L.tensor(t, "tensors") for t in L.arg(0)]
    L.emit("concat", parts, L.out(), axis=L.dim(parts[0], L.arg(1)))


_HANDLERS: Dict[str, Callable[[_Lowering], None]] = {
    "aten::linear": _linear,
    "aten::matmul": _matmul,
    "aten::mm": _matmul,
    "aten::bmm": _matmul,
    "aten::add": _add,
    "aten::baddbmm": _baddbmm,
    "aten::masked_fill": _masked_fill,
    "aten::expand": _expand,
    "aten::where": _where,
    "aten::_scaled_dot_product_attention": _scaled_dot_product_attention,
    "aten::split": _split,
    "aten::split_with_sizes": _split_with_sizes,
    "aten::sub": _binary("sub"),
    "aten::mul": _binary("mul"),
    "aten::div": _binary("div"),
    "aten::rsub": _rsub,
    "aten::floor_divide": _floor_divide,
    "aten::relu": _unary("relu"),
    "aten::silu": _unary("silu"),
    "aten::sigmoid": _unary("sigmoid"),
    "aten::tanh": _unary("tanh"),
    "aten::exp": _unary("exp"),
    "aten::gelu": _gelu,
    "aten::softmax": _softmax,
    "aten::layer_norm": _layer_norm,
    "aten::reshape": _reshape,
    "aten::view": _reshape,
    "aten::flatten": _reshape,
    "aten::squeeze": _reshape,
    "aten::unsqueeze": _reshape,
    "aten::contiguous": _identity,
    "aten::dropout": _dropout,
    "aten::transpose": _transpose,
    "aten::t": _t,
    "aten::permute": _permute_op,
    "aten::slice": _slice,
    "aten::cat": _cat,
    "aten::chunk": _chunk,
}

# Operators computed when the model is traced when their operands are all
# constants (see _Lowering._fold): what attention masks are built from.
_FOLDED_KINDS = frozenset({
    "aten::ones", "aten::zeros", "aten::full", "aten::arange", "aten::ones_like",
    "aten::zeros_like", "aten::full_like", "aten::triu", "aten::tril", "aten::eq", "aten::ne",
    "aten::lt", "aten::le", "aten::gt", "aten::ge", "aten::logical_not", "aten::bitwise_not",
    "aten::logical_and", "aten::logical_or", "aten::__and__", "aten::__or__", "aten::to",
    "aten::type_as", "aten::masked_fill", "aten::where", "aten::slice", "aten::select",
    "aten::view", "aten::reshape", "aten::unsqueeze", "aten::squeeze", "aten::expand",
    "aten::transpose", "aten::contiguous", "aten::add", "aten::sub", "aten::mul", "aten::neg",
    "aten::zero_", "aten::fill_",
})

# Operators whose value depends only on their operand's shape (fixed by the
# trace), folded even when the operand is computed on the device.
_SHAPE_ONLY_KINDS = frozenset({"aten::zeros_like", "aten::ones_like", "aten::full_like"})

# The operators that take int32 tensors (hw/isa.md: integers are exact in
# the vector engine's add, sub and mul below 2^24, and data movement copies
# any dtype).
_INT32_OPERATORS = frozenset({
    "aten::add", "aten::sub", "aten::mul", "aten::rsub", "aten::reshape", "aten::view",
    "aten::flatten", "aten::squeeze", "aten::unsqueeze", "aten::contiguous", "aten::dropout",
    "aten::transpose", "aten::t", "aten::permute", "aten::slice", "aten::cat", "aten::chunk",
    "aten::split", "aten::split_with_sizes",
})

SUPPORTED_OPERATORS: Tuple[str, ...] = tuple(sorted(_HANDLERS))


def classify(graph: torch._C.Graph, example_inputs: Sequence[torch.Tensor], probed: Dict[str, Any],
             to_cpu: frozenset = frozenset()
             ) -> Dict[str, Tuple[torch._C.Node, Optional[UnsupportedOperatorError]]]:
    """For each operator of @p graph (by node key): whether it lowers."""
    return _Lowering(graph, probed).classify(example_inputs, to_cpu)


def lower_part(name: str, graph: torch._C.Graph, example_inputs: Sequence[torch.Tensor],
               probed: Dict[str, Any], members: frozenset,
               outputs: Sequence[str]) -> Tuple[Lowered, List[str]]:
    """Lowers the operators @p members of @p graph (node keys) into the IR
    graph @p name computing @p outputs; see _Lowering.run_part."""
    return _Lowering(graph, probed).run_part(name, example_inputs, members, outputs)


def lower(name: str, graph: torch._C.Graph, example_inputs: Sequence[torch.Tensor]) -> Lowered:
    """Lowers the frozen @p graph traced with @p example_inputs into the IR
    graph @p name; raises UnsupportedOperatorError at the first operator
    the device cannot run."""
    return _Lowering(graph, probe(graph, example_inputs)).run(name, example_inputs)
