# SPDX-License-Identifier: MIT
"""What every rank of a collective must agree on, checked before any byte
of the collective moves: each rank describes its call (the operation, its
tensors' dtypes and shapes, the reduce operation, the root, the split
sizes, and any error of its own arguments), the ranks exchange the
descriptions, and each rank checks all of them the same way. So a
mismatch, a tensor on the wrong device or an unsupported reduce operation
raises the same error on every rank instead of a hang, a wrong result, or
Gloo aborting the process (it terminates a process whose peer sent a
message of another size)."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Sequence

import torch
import torch.distributed as dist
from torch._C._distributed_c10d import AllgatherOptions

from . import _gloo

# The bytes a rank's description takes in the exchange (a fixed size, so
# that the exchange itself can never mismatch).
DESCRIPTION_BYTES = 4096

_INTEGRAL_ONLY = {"BAND", "BOR", "BXOR"}
_ANY_DTYPE = {"SUM", "PRODUCT", "MIN", "MAX", "AVG"}


def reduce_op_name(op: Any) -> str:
    """The name of a ReduceOp (a ReduceOp or its RedOpType)."""
    red = getattr(op, "op", op)
    return str(red).rsplit(".", 1)[-1]


def describe_tensor(t: torch.Tensor) -> str:
    return f"{str(t.dtype).replace('torch.', '')}{list(t.shape)}"


def tensor_error(t: Any, what: str, device: torch.device) -> Optional[str]:
    """Why @p t cannot take part in a collective of a group on @p device."""
    if not isinstance(t, torch.Tensor):
        return f"{what} is a {type(t).__name__}, not a tensor"
    if t.layout != torch.strided:
        return f"{what} is a {t.layout} tensor; the neuron process group takes dense tensors"
    if t.device != device:
        hint = ""
        if t.device.type == "cpu":
            hint = " (a 'cpu:gloo,neuron:neuron' process group takes CPU tensors to Gloo)"
        return (f"{what} is on {t.device}, the process group's device is {device} "
                f"(one rank per NeuronCore: LOCAL_RANK selects it){hint}")
    return None


def reduce_op_error(op: Any, dtypes: Sequence[torch.dtype]) -> Optional[str]:
    """Why the reduce operation @p op cannot reduce tensors of @p dtypes."""
    name = reduce_op_name(op)
    if name in _INTEGRAL_ONLY:
        bad = [d for d in dtypes if d.is_floating_point or d.is_complex]
        if bad:
            return f"ReduceOp.{name} reduces integer tensors, not {str(bad[0]).replace('torch.', '')}"
        return None
    if name == "AVG":
        bad = [d for d in dtypes if not d.is_floating_point]
        if bad:
            return f"ReduceOp.AVG averages floating-point tensors, not {str(bad[0]).replace('torch.', '')}"
        return None
    if name not in _ANY_DTYPE:
        return (f"ReduceOp.{name} is not supported by the neuron process group "
                f"(it has SUM, AVG, PRODUCT, MIN, MAX, and BAND, BOR, BXOR for integers)")
    return None


@dataclass
class Description:
    """One rank's call: @p key must be equal on every rank; @p splits (for
    all_to_all) are checked pairwise; @p error is the rank's own error."""

    op: str
    key: str
    error: Optional[str] = None
    splits: Optional[Dict[str, List[int]]] = field(default=None)

    def encode(self) -> torch.Tensor:
        fields: Dict[str, Any] = {"op": self.op, "key": self.key, "error": self.error,
                                  "splits": self.splits}
        text = json.dumps(fields).encode()
        if len(text) > DESCRIPTION_BYTES:
            # Many tensors: their shapes are compared by digest.
            digest = hashlib.sha256(self.key.encode()).hexdigest()
            fields["key"] = f"{self.key[:200]}... (sha256 {digest})"
            fields["error"] = self.error[:1000] if self.error else None
            text = json.dumps(fields).encode()
        if len(text) > DESCRIPTION_BYTES:
            raise RuntimeError(f"neuron: the description of {self.op} takes {len(text)} bytes, "
                               f"more than {DESCRIPTION_BYTES}")
        buf = torch.zeros(DESCRIPTION_BYTES, dtype=torch.uint8)
        buf[:len(text)] = torch.frombuffer(bytearray(text), dtype=torch.uint8)
        return buf

    @staticmethod
    def decode(buf: torch.Tensor) -> "Description":
        raw = bytes(buf.tolist()).rstrip(b"\0")
        fields = json.loads(raw.decode())
        return Description(op=fields["op"], key=fields["key"], error=fields["error"],
                           splits=fields["splits"])


def exchange(gloo: dist.ProcessGroup, mine: Description, size: int) -> List[Description]:
    """Every rank's description (Gloo's allgather over host memory)."""
    outs = [[torch.empty(DESCRIPTION_BYTES, dtype=torch.uint8) for _ in range(size)]]
    ins = [mine.encode()]
    _gloo.wait(gloo.allgather(outs, ins, AllgatherOptions()), outs, ins)
    out = outs[0]
    return [Description.decode(b) for b in out]


def verdict(descriptions: List[Description]) -> Optional[str]:
    """Why the ranks' calls cannot run together (None when they can): the
    same text on every rank, since every rank checks the same list."""
    errors = [f"rank {r}: {d.error}" for r, d in enumerate(descriptions) if d.error]
    if errors:
        return "; ".join(errors)
    ops = {d.op for d in descriptions}
    if len(ops) > 1:
        calls = ", ".join(f"rank {r} {d.op}" for r, d in enumerate(descriptions))
        return f"the ranks called different collectives ({calls})"
    keys = {d.key for d in descriptions}
    if len(keys) > 1:
        calls = "; ".join(f"rank {r}: {d.key}" for r, d in enumerate(descriptions))
        return f"the ranks' arguments differ ({calls})"
    if descriptions[0].splits is not None:
        return _split_verdict(descriptions)
    return None


def _split_verdict(descriptions: List[Description]) -> Optional[str]:
    """all_to_all: what rank r sends to rank j (its input split j) must be
    what rank j receives from rank r (its output split r)."""
    for r, d in enumerate(descriptions):
        for j, sent in enumerate(d.splits["in"]):
            received = descriptions[j].splits["out"][r]
            if sent != received:
                return (f"rank {r} sends {sent} elements to rank {j}, which expects "
                        f"{received} from it (input and output split sizes must pair up)")
    return None
