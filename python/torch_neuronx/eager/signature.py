# SPDX-License-Identifier: MIT
"""An operator call's signature: what its compiled kernel depends on (the
operator, each tensor's dtype and shape, the other arguments' values), and
the call rebuilt around other tensors."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional, Tuple

import torch


# An argument's place in the flat list of leaves: -1 for a single value,
# else the length of the list it is.
Layout = Tuple[Tuple[Optional[str], int], ...]


@dataclass
class Call:
    op: torch._ops.OpOverload
    leaves: List[Any]
    layout: Layout  # (keyword or None, -1 or list length) per argument
    tensor_positions: List[int]  # leaves that are neuron tensors (the inputs)
    key: Tuple[Any, ...]
    # Leaves that are floating-point numbers (a learning rate, a bias
    # correction), and the key with their values left out: the calls of one
    # family differ only in those numbers, which a kernel may take as inputs.
    number_positions: Tuple[int, ...] = ()
    family: Tuple[Any, ...] = ()

    @property
    def tensors(self) -> List[torch.Tensor]:
        return [self.leaves[i] for i in self.tensor_positions]

    def arguments(self, leaves: List[Any]) -> Tuple[Tuple[Any, ...], Dict[str, Any]]:
        """The positional and keyword arguments of @p leaves."""
        args: List[Any] = []
        kwargs: Dict[str, Any] = {}
        i = 0
        for name, n in self.layout:
            if n < 0:
                v, i = leaves[i], i + 1
            else:
                v, i = list(leaves[i:i + n]), i + n
            if name is None:
                args.append(v)
            else:
                kwargs[name] = v
        return tuple(args), kwargs

    def rebuilt(self) -> Callable[..., Any]:
        """The call as a function of its neuron tensors."""
        def call(*tensors: torch.Tensor) -> Any:
            leaves = list(self.leaves)
            for pos, t in zip(self.tensor_positions, tensors):
                leaves[pos] = t
            args, kwargs = self.arguments(leaves)
            return self.op(*args, **kwargs)
        return call


def _leaf_key(x: Any) -> Any:
    if isinstance(x, torch.Tensor):
        if x.device.type == "neuron":
            return ("T", x.dtype, tuple(x.shape))
        # A CPU scalar tensor mixed with device tensors: its value counts
        # (a larger one is refused by check_devices).
        return ("S", x.dtype, x.item()) if x.dim() == 0 else ("C", x.dtype, tuple(x.shape))
    if isinstance(x, (torch.dtype, torch.device, torch.layout, torch.memory_format)):
        return str(x)
    if isinstance(x, float) and x != x:
        return ("nan",)
    return x


def _skipped_by_cat(t: Any, others: List[Any]) -> bool:
    """A 1-d empty tensor, which cat skips whatever the other inputs'
    shapes (a legacy form: transformers' DynamicCache starts from one),
    of the dtype of every other input (so the result's is theirs)."""
    return isinstance(t, torch.Tensor) and t.dim() == 1 and t.numel() == 0 and all(
        isinstance(o, torch.Tensor) and o.dtype == t.dtype for o in others)


def call_of(op: torch._ops.OpOverload, args: Tuple[Any, ...], kwargs: Dict[str, Any]) -> Call:
    if op is torch.ops.aten.cat.default and args and isinstance(args[0], (list, tuple)):
        # The same call without the inputs cat skips (not a kernel of an
        # empty input, which the device cannot have).
        kept = [t for t in args[0] if not _skipped_by_cat(t, list(args[0]))]
        if kept and len(kept) < len(args[0]):
            args = (kept,) + tuple(args[1:])
    leaves: List[Any] = []
    layout: List[Tuple[Optional[str], int]] = []
    for name, v in [(None, a) for a in args] + sorted(kwargs.items()):
        if isinstance(v, (list, tuple)):
            layout.append((name, len(v)))
            leaves.extend(v)
        else:
            layout.append((name, -1))
            leaves.append(v)
    positions = [i for i, x in enumerate(leaves)
                 if isinstance(x, torch.Tensor) and x.device.type == "neuron"]
    keys = [_leaf_key(x) for x in leaves]
    key = (op, tuple(layout), tuple(keys))
    numbers = tuple(i for i, x in enumerate(leaves) if type(x) is float)
    family = (op, tuple(layout), tuple(("number",) if i in numbers else k
                                       for i, k in enumerate(keys)))
    return Call(op, leaves, tuple(layout), positions, key, numbers, family)


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
