# SPDX-License-Identifier: MIT
"""An operator call's signature: what its compiled kernel depends on (the
operator, each tensor's dtype and shape, the other arguments' values), and
the call rebuilt around other tensors."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Tuple

import torch
from torch.utils._pytree import TreeSpec, tree_flatten, tree_unflatten


@dataclass
class Call:
    op: torch._ops.OpOverload
    leaves: List[Any]
    spec: TreeSpec
    tensor_positions: List[int]  # leaves that are neuron tensors (the inputs)
    key: Tuple[Any, ...]

    @property
    def tensors(self) -> List[torch.Tensor]:
        return [self.leaves[i] for i in self.tensor_positions]

    def device(self) -> torch.device:
        return self.leaves[self.tensor_positions[0]].device

    def rebuilt(self) -> Callable[..., Any]:
        """The call as a function of its neuron tensors."""
        def call(*tensors: torch.Tensor) -> Any:
            leaves = list(self.leaves)
            for pos, t in zip(self.tensor_positions, tensors):
                leaves[pos] = t
            args, kwargs = tree_unflatten(leaves, self.spec)
            return self.op(*args, **kwargs)
        return call


def _leaf_key(x: Any) -> Any:
    if isinstance(x, torch.Tensor):
        if x.device.type == "neuron":
            return ("T", x.dtype, tuple(x.shape))
        # A CPU scalar tensor mixed with device tensors: its value counts.
        return ("S", x.dtype, x.item())
    if isinstance(x, (torch.dtype, torch.device, torch.layout, torch.memory_format)):
        return str(x)
    if isinstance(x, float) and x != x:
        return ("nan",)
    return x


def call_of(op: torch._ops.OpOverload, args: Tuple[Any, ...], kwargs: Dict[str, Any]) -> Call:
    leaves, spec = tree_flatten((args, kwargs))
    positions = [i for i, x in enumerate(leaves)
                 if isinstance(x, torch.Tensor) and x.device.type == "neuron"]
    key = (op, str(spec), tuple(_leaf_key(x) for x in leaves))
    return Call(op, leaves, spec, positions, key)


def check_devices(op: torch._ops.OpOverload, call: Call) -> None:
    """Tensors of one neuron index (and CPU scalars), as torch demands of
    every device."""
    devices = {t.device for t in call.tensors}
    if len(devices) > 1:
        names = ", ".join(sorted(str(d) for d in devices))
        raise RuntimeError(f"Expected all tensors to be on the same device, but found at least "
                           f"two devices, {names} (in {op})")
    for x in call.leaves if devices else ():
        if (isinstance(x, torch.Tensor) and x.device.type != "neuron" and x.dim() > 0):
            raise RuntimeError(f"Expected all tensors to be on the same device, but found at least "
                               f"two devices, {next(iter(devices))} and {x.device} (in {op}); "
                               f"only 0-dimensional CPU tensors mix with neuron tensors")
