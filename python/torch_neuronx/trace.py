# SPDX-License-Identifier: MIT
"""torch_neuronx.trace: capture the model's ATen graph (capture.py), lower
it to the neuron compiler's IR (lowering/), compile, and wrap the program
in a TorchScript module whose forward calls torch.ops.neuron.forward_v2,
so that torch.jit.save and torch.jit.load keep it."""

from __future__ import annotations

import linecache
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple, Union

import torch

from .capture import ExampleInputs, capture
from .lowering import BOOL_INPUT_DTYPE, LOWERINGS, lower
from .partition import PartitionerConfig, partition
from .program import compile_lowered, script


_wrapper_classes: Dict[Tuple[int, Optional[int], Tuple[int, ...]], type] = {}


def _wrapper_class(num_inputs: int, tuple_outputs: Optional[int],
                   bool_inputs: Tuple[int, ...] = ()) -> type:
    """The TorchScript module class whose forward takes @p num_inputs
    tensors and returns one tensor, or a tuple of @p tuple_outputs; the
    inputs at @p bool_inputs must be bool and reach the device as 0 and 1
    of BOOL_INPUT_DTYPE. Its source is made here, once per form:
    TorchScript compiles a class from its source, which it reads through
    linecache."""
    key = (num_inputs, tuple_outputs, bool_inputs)
    if key in _wrapper_classes:
        return _wrapper_classes[key]
    params = ", ".join(f"input{i}: torch.Tensor" for i in range(num_inputs))
    args = ", ".join(f"input{i}" for i in range(num_inputs))
    suffix = "".join(f"b{i}" for i in bool_inputs)
    if tuple_outputs is None:
        name, ret, result = f"NeuronModule{num_inputs}{suffix}", "torch.Tensor", "outputs[0]"
    else:
        name = f"NeuronModule{num_inputs}x{tuple_outputs}{suffix}"
        ret = f"Tuple[{', '.join(['torch.Tensor'] * tuple_outputs)}]"
        result = f"({''.join(f'outputs[{i}], ' for i in range(tuple_outputs))})"
    conversions = "".join(
        f"        if input{i}.dtype != torch.bool:\n"
        f"            raise RuntimeError(\"neuron: input {i} was traced as torch.bool (a mask); "
        f"pass a bool tensor\")\n"
        f"        input{i} = input{i}.to({BOOL_INPUT_DTYPE})\n" for i in bool_inputs)
    source = (
        f"class {name}(torch.nn.Module):\n"
        f"    def __init__(self, model: Any) -> None:\n"
        f"        super().__init__()\n"
        f"        self.model = model\n"
        f"\n"
        f"    def forward(self, {params}) -> {ret}:\n"
        f"{conversions}"
        f"        outputs = torch.ops.neuron.forward_v2([{args}], self.model)\n"
        f"        return {result}\n")
    filename = f"<torch_neuronx wrapper {name}>"
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    scope: Dict[str, Any] = {"torch": torch, "Any": Any, "Tuple": Tuple, "__name__": __name__}
    exec(compile(source, filename, "exec"), scope)
    cls = scope[name]
    _wrapper_classes[key] = cls
    return cls


def compiler_arguments(compiler_args: Optional[Union[str, Sequence[str]]]) -> List[str]:
    return [compiler_args] if isinstance(compiler_args, str) else list(compiler_args or [])


def trace(func: Union[torch.nn.Module, Callable[..., Any]], example_inputs: ExampleInputs, *_: Any,
          compiler_workdir: Optional[Union[str, Path]] = None,
          compiler_args: Optional[Union[str, Sequence[str]]] = None,
          partitioner_config: Optional[PartitionerConfig] = None,
          **kwargs: Any) -> torch.jit.ScriptModule:
    """Compiles @p func for the neuron device, as torch_neuronx.trace does.

    Returns a TorchScript module taking CPU tensors of the example inputs'
    shapes and dtypes; torch.jit.save writes it with its program, and
    torch.jit.load reads it back in any process that imported torch_neuronx.
    compiler_workdir keeps the traced graph, the IR, the program and the
    compile log. compiler_args: "--no-fuse" (every operator on its own).
    partitioner_config: run the operators the device does not support on
    the CPU and the connected rest as device programs (docs/torch.md)."""
    if _:
        raise TypeError("torch_neuronx.trace takes two positional arguments "
                        "(func, example_inputs)")
    if kwargs:
        raise TypeError(f"torch_neuronx.trace: unsupported arguments: {', '.join(sorted(kwargs))}")
    if partitioner_config is not None and not isinstance(partitioner_config, PartitionerConfig):
        raise TypeError("torch_neuronx.trace: partitioner_config is a "
                        f"{type(partitioner_config).__name__}, not a torch_neuronx.PartitionerConfig")
    args = compiler_arguments(compiler_args)
    captured = capture(func, example_inputs, LOWERINGS)
    if partitioner_config is not None:
        return partition(captured, partitioner_config, compiler_workdir, args)
    lowered = lower(captured)
    model = compile_lowered(lowered, compiler_workdir, args, str(captured.gm.graph))
    wrapper = _wrapper_class(len(captured.inputs),
                             len(lowered.outputs) if lowered.tuple_output else None,
                             lowered.bool_inputs)(model)
    return script(wrapper)
