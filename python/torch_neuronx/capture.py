# SPDX-License-Identifier: MIT
"""Capturing a model as an FX graph of ATen operators, as the dispatcher
runs them (make_fx): the graph every path to the device lowers (trace,
and the device's own operators). Parameters and buffers are inputs of the
graph, not constants in it; every node's value on the example inputs is
kept, for shapes, dtypes and constant folding."""

from __future__ import annotations

import contextlib
import inspect
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Collection, Dict, List, Sequence, Tuple, Union

import torch
import torch.fx.traceback as fx_traceback
from torch.fx.experimental.proxy_tensor import make_fx
from torch.func import functional_call

ExampleInputs = Union[torch.Tensor, Sequence[torch.Tensor]]

# torch's and this package's frames in a node's stack trace: the call site
# is the first frame outside them.
_SKIPPED_DIRS = (str(Path(torch.__file__).resolve().parent),
                 str(Path(__file__).resolve().parent))


@dataclass
class Captured:
    """A model's graph: inputs are the parameters, the buffers, then the
    model's own inputs (placeholders in that order); @p values holds every
    node's value in the run on the example inputs."""
    name: str
    gm: torch.fx.GraphModule
    parameters: Dict[torch.fx.Node, str]  # placeholder -> the parameter's name
    buffers: Dict[torch.fx.Node, str]
    inputs: List[torch.fx.Node]
    input_names: List[str]  # the names of forward's parameters
    example_inputs: Tuple[torch.Tensor, ...]
    values: Dict[torch.fx.Node, Any]
    tuple_output: bool


class _Function(torch.nn.Module):
    """A plain function as a module."""

    def __init__(self, func: Callable[..., Any]) -> None:
        super().__init__()
        self.func = func

    def forward(self, *args: torch.Tensor) -> Any:
        return self.func(*args)


def as_tuple(example_inputs: ExampleInputs, api: str) -> Tuple[torch.Tensor, ...]:
    inputs = (example_inputs,) if isinstance(example_inputs, torch.Tensor) else tuple(example_inputs)
    for i, x in enumerate(inputs):
        if not isinstance(x, torch.Tensor):
            raise TypeError(f"{api}: example input {i} is a {type(x).__name__}, not a tensor")
    return inputs


def module_name(func: Union[torch.nn.Module, Callable[..., Any]]) -> str:
    return (type(func).__name__ if isinstance(func, torch.nn.Module)
            else getattr(func, "__name__", "function"))


def decompositions(kept_whole: Collection[Any]) -> Dict[Any, Callable[..., Any]]:
    """PyTorch's decompositions into core ATen operators of every operator
    but those in @p kept_whole (the ones that have a lowering)."""
    table = torch.export.default_decompositions()
    return {op: fn for op, fn in table.items() if op not in kept_whole}


@contextlib.contextmanager
def _module_paths(module: torch.nn.Module) -> Any:
    """Records in each node's meta["nn_module_stack"] the paths of the
    submodules of @p module being called when the node was recorded (the
    lowering names IR values after them: "fc1_matmul")."""
    paths = {m: p for p, m in module.named_modules()}
    stack: List[str] = []

    def publish() -> None:
        fx_traceback.current_meta["nn_module_stack"] = {p: (p, "") for p in stack}

    def enter(m: torch.nn.Module, args: Any) -> None:
        if m in paths:
            stack.append(paths[m])
            publish()

    def leave(m: torch.nn.Module, args: Any, out: Any) -> None:
        if m in paths and stack:
            stack.pop()
            publish()

    hooks = [torch.nn.modules.module.register_module_forward_pre_hook(enter),
             torch.nn.modules.module.register_module_forward_hook(leave)]
    try:
        with fx_traceback.preserve_node_meta():
            yield
    finally:
        for h in hooks:
            h.remove()


def _input_names(fn: Callable[..., Any], count: int) -> List[str]:
    """The names of @p fn's parameters ("x"), else input0, input1, ..."""
    try:
        params = [p.name for p in inspect.signature(fn).parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    except (TypeError, ValueError):
        params = []
    if len(params) < count:
        return [f"input{i}" for i in range(count)]
    return params[:count]


class Recorder(torch.fx.Interpreter):
    """Runs a graph and keeps every node's value (in-place operators'
    operands as they were before the write)."""

    def __init__(self, gm: torch.fx.GraphModule) -> None:
        super().__init__(gm)
        self.values: Dict[torch.fx.Node, Any] = {}

    def run_node(self, n: torch.fx.Node) -> Any:
        if _writes_in_place(n):
            # keep the values the operands had before the write
            for a in n.all_input_nodes:
                if isinstance(self.values.get(a), torch.Tensor):
                    self.values[a] = self.values[a].clone()
        v = super().run_node(n)
        self.values[n] = v
        return v


def _writes_in_place(n: torch.fx.Node) -> bool:
    """aten.copy_ and the other in-place operators (a trailing underscore)."""
    return (n.op == "call_function" and isinstance(n.target, torch._ops.OpOverload)
            and n.target.name().split("::")[-1].split(".")[0].endswith("_"))


def capture(func: Union[torch.nn.Module, Callable[..., Any]], example_inputs: ExampleInputs,
            kept_whole: Collection[Any] = (), api: str = "torch_neuronx.trace") -> Captured:
    """@p func's graph on @p example_inputs (the module in eval mode); the
    operators in @p kept_whole are recorded as they are, the others
    decomposed into core ATen where PyTorch can."""
    inputs = as_tuple(example_inputs, api)
    module = func if isinstance(func, torch.nn.Module) else _Function(func).eval()
    if module.training:
        raise ValueError(f"{api}: the module is in training mode; "
                         "call .eval() on it before tracing")
    params = dict(module.named_parameters())
    buffers = dict(module.named_buffers())

    def forward(p: Dict[str, torch.Tensor], b: Dict[str, torch.Tensor],
                *args: torch.Tensor) -> Any:
        return functional_call(module, (p, b), args)

    # With grad enabled: under no_grad, nn.MultiheadAttention and
    # nn.TransformerEncoderLayer take fused fast paths
    # (aten._native_multi_head_attention, ...) instead of the operators
    # they are made of.
    with torch.enable_grad(), _module_paths(module):
        gm = make_fx(forward, decomposition_table=decompositions(kept_whole),
                     record_stack_traces=True)(params, buffers, *inputs)
    # What autograd would save (detached results) is dead code here.
    gm.graph.eliminate_dead_code()
    gm.recompile()
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    np_, nb = len(params), len(buffers)
    recorder = Recorder(gm)
    with torch.no_grad():
        out = recorder.run(*params.values(), *buffers.values(), *inputs)
    return Captured(
        name=module_name(func), gm=gm,
        parameters=dict(zip(placeholders[:np_], params)),
        buffers=dict(zip(placeholders[np_:np_ + nb], buffers)),
        inputs=placeholders[np_ + nb:],
        input_names=_input_names(module.func if isinstance(module, _Function)
                                 else module.forward, len(inputs)),
        example_inputs=inputs,
        values=recorder.values, tuple_output=isinstance(out, (tuple, list)))


def stack_frames(node: torch.fx.Node) -> List[str]:
    """@p node's Python stack, innermost frame first ("model.py(12): forward")."""
    trace = node.meta.get("stack_trace") or ""
    frames = []
    lines = trace.splitlines()
    for i, line in enumerate(lines):
        line = line.strip()
        if line.startswith("File "):
            parts = line.split(", ")
            path = parts[0][len("File "):].strip('"')
            lineno = parts[1].removeprefix("line ") if len(parts) > 1 else "?"
            fn = parts[2].removeprefix("in ") if len(parts) > 2 else "?"
            frames.append(f"{path}({lineno}): {fn}")
    return list(reversed(frames))


def call_site(node: torch.fx.Node) -> str:
    """The innermost frame of @p node's stack outside torch and this
    package ("model.py(12): forward"), else its innermost frame."""
    frames = stack_frames(node)
    for f in frames:
        if not f.startswith(_SKIPPED_DIRS) and not os.path.basename(f).startswith("<"):
            return f
    return frames[0] if frames else "<unknown location>"


def node_scope(node: torch.fx.Node) -> str:
    """The path of the module @p node was called in ("encoder_mlp_fc1"),
    "" at the top."""
    stack = node.meta.get("nn_module_stack") or {}
    if not stack:
        return ""
    path = list(stack.values())[-1][0]
    return str(path).replace(".", "_").strip("_")
