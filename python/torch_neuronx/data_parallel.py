# SPDX-License-Identifier: MIT
"""torch_neuronx.DataParallel: a traced model replicated on several cores
of the device, each replica running a slice of the batch at the same time
(docs/torch.md)."""

from __future__ import annotations

import io
from concurrent.futures import ThreadPoolExecutor
from typing import Any, List, Optional, Sequence, Tuple, Union

import torch

DeviceId = Union[int, str]


def _model_attributes(module: torch.jit.ScriptModule) -> List[str]:
    """The names of @p module's torch.classes.neuron.Model attributes its
    forward uses."""
    names = []
    for n in module.graph.nodes():
        if (n.kind() == "prim::GetAttr"
                and n.output().type().str().endswith("torch.classes.neuron.Model")):
            names.append(n.s("name"))
    if not names:
        raise TypeError("torch_neuronx.DataParallel: the module runs no neuron model: "
                        "pass a module returned by torch_neuronx.trace")
    return names


def _core_index(device_id: DeviceId) -> int:
    if isinstance(device_id, int) and not isinstance(device_id, bool):
        return device_id
    if isinstance(device_id, str) and device_id.startswith("nc:") and device_id[3:].isdigit():
        return int(device_id[3:])
    raise ValueError(f"torch_neuronx.DataParallel: device id {device_id!r} is neither an int "
                     "nor 'nc:<index>'")


class DataParallel(torch.nn.Module):
    """@p model (from torch_neuronx.trace) loaded once per core of
    @p device_ids (ints or "nc:N", indices into the cores this process may
    use: $NEURON_RT_VISIBLE_CORES, else all the device's; default: all of
    them). A call splits every input along @p dim into one equal slice per
    core, runs the slices at the same time and concatenates the results
    along @p dim: the batch is the traced one times the number of cores."""

    def __init__(self, model: torch.jit.ScriptModule, device_ids: Optional[Sequence[DeviceId]] = None,
                 dim: int = 0) -> None:
        super().__init__()
        if not isinstance(model, torch.jit.ScriptModule):
            raise TypeError("torch_neuronx.DataParallel: the model is a "
                            f"{type(model).__name__}, not the ScriptModule torch_neuronx.trace "
                            "returns")
        attributes = _model_attributes(model)
        visible = list(torch.ops.neuron.visible_cores())
        indices = (list(range(len(visible))) if device_ids is None
                   else [_core_index(d) for d in device_ids])
        if not indices:
            raise ValueError("torch_neuronx.DataParallel: device_ids is empty")
        for i in indices:
            if not 0 <= i < len(visible):
                raise ValueError(f"torch_neuronx.DataParallel: device id {i}: this process "
                                 f"may use {len(visible)} core(s) (cores "
                                 f"{', '.join(map(str, visible))} of the device)")
        if len(set(indices)) != len(indices):
            raise ValueError(f"torch_neuronx.DataParallel: device_ids {list(device_ids or [])} "
                             "names a core twice")
        self.module = model
        self.dim = dim
        self.device_ids = indices
        self.cores = [visible[i] for i in indices]  # the device's core indices
        saved = io.BytesIO()
        torch.jit.save(model, saved)
        self.replicas: List[torch.jit.ScriptModule] = []
        for core in self.cores:
            saved.seek(0)
            replica = torch.jit.load(saved)
            for name in attributes:
                getattr(replica, name).bind_core(core)
            self.replicas.append(replica)
        self.num_workers = len(self.replicas)
        self._pool: Optional[ThreadPoolExecutor] = None

    def _slices(self, inputs: Tuple[torch.Tensor, ...]) -> List[Tuple[torch.Tensor, ...]]:
        n = len(self.replicas)
        per_input = []
        for i, x in enumerate(inputs):
            if not isinstance(x, torch.Tensor):
                raise TypeError(f"torch_neuronx.DataParallel: input {i} is a "
                                f"{type(x).__name__}, not a tensor")
            size = x.shape[self.dim]
            if size % n:
                raise ValueError(
                    f"torch_neuronx.DataParallel: input {i} has {size} along dim {self.dim}, "
                    f"not a multiple of the {n} cores (each core runs the traced batch)")
            per_input.append(torch.split(x, size // n, dim=self.dim))
        return [tuple(p[k] for p in per_input) for k in range(n)]

    def forward(self, *inputs: torch.Tensor) -> Any:
        slices = self._slices(inputs)
        if self._pool is None:
            self._pool = ThreadPoolExecutor(max_workers=self.num_workers,
                                            thread_name_prefix="neuron-dp")
        # TorchScript releases the GIL while a replica runs: the cores'
        # jobs overlap.
        futures = [self._pool.submit(r, *s) for r, s in zip(self.replicas, slices)]
        results = [f.result() for f in futures]
        if isinstance(results[0], torch.Tensor):
            return torch.cat(results, dim=self.dim)
        return tuple(torch.cat(parts, dim=self.dim) for parts in zip(*results))

    def __del__(self) -> None:
        if getattr(self, "_pool", None) is not None:
            self._pool.shutdown(wait=False)
