# SPDX-License-Identifier: MIT
"""Runs PyTorch's OpInfo reference inputs (torch.testing._internal's
op_db, the inputs PyTorch tests every backend with) on the `neuron`
device against the CPU, as PyTorch's test_compare_cpu does. Shared by
the pytest suite (test_opinfo.py) and its long form (`python
opinfo_run.py`: every OpInfo, the pass rate and the OpInfos that ran
entirely on the device)."""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Set, Tuple

import torch
from torch.testing._internal.common_methods_invocations import op_db
from torch.utils._pytree import tree_flatten, tree_map

import torch_neuronx
from torch_neuronx.eager.fallback import fallback_calls_by_reason

DTYPES = (torch.float32, torch.bfloat16)

# PyTorch's own test of a device against the CPU (TestCommon.test_compare_cpu
# in test/test_ops.py) runs each OpInfo's reference inputs on both and
# compares them with atol = rtol = 1e-3. That is finer than bfloat16's
# resolution (2^-8): there the relative tolerance is the one PyTorch
# compares bfloat16 with everywhere else (torch.testing.assert_close's
# default, 1.6e-2).
TOLERANCES = {torch.float32: (1e-3, 1e-3), torch.bfloat16: (1e-3, 1.6e-2)}  # (atol, rtol)

# OpInfos whose results are random, or depend on memory addresses or
# uninitialized memory: no result to compare.
UNCOMPARABLE = ("rand", "normal", "bernoulli", "dropout", "multinomial", "uniform", "cauchy",
                "exponential", "geometric", "log_normal", "empty", "new_empty", "poisson",
                "randint", "randn", "nonzero_static", "data_ptr", "storage", "item")


def comparable(op: Any) -> bool:
    # (a dropout's backward is given its mask: deterministic)
    random = any(w in op.name for w in UNCOMPARABLE) and not op.name.endswith("dropout_backward")
    return not random and not op.name.startswith("_refs")


def skipped_by_pytorch(op: Any, dtype: torch.dtype) -> bool:
    """Whether the OpInfo skips or expects test_compare_cpu to fail for
    every device (nondeterministic or undefined results)."""
    return any(d.is_active("TestCommon", "test_compare_cpu", "privateuseone", dtype, {})
               for d in op.decorators if hasattr(d, "is_active"))


def aten_name(op: Any) -> str:
    """The ATen operator the OpInfo's function calls: its aten_name, which
    PyTorch leaves as the Python name for most of torch.nn.functional
    ("nn.functional.silu" calls aten::silu)."""
    name = op.aten_name
    return name[len("nn.functional."):] if name.startswith("nn.functional.") else name


def claimed_opinfos() -> List[Any]:
    """The comparable OpInfos whose ATen operator the device lowers."""
    lowered = set(torch_neuronx.SUPPORTED_OPERATORS)
    return [op for op in op_db if comparable(op) and f"aten::{aten_name(op)}" in lowered]


def to_neuron(x: Any) -> Any:
    return x.to("neuron") if isinstance(x, torch.Tensor) else x


def to_cpu(x: Any) -> Any:
    return x.cpu() if isinstance(x, torch.Tensor) else x


@dataclass
class Outcome:
    samples: int = 0
    failures: List[str] = field(default_factory=list)
    device_ops: Set[str] = field(default_factory=set)  # ATen operators run by device kernels
    fell_back: Set[Tuple[str, str]] = field(default_factory=set)  # (ATen operator, why) on the CPU
    on_device_samples: int = 0  # samples nothing of which ran on the CPU

    @property
    def on_device(self) -> bool:
        """Every sample matched the CPU and nothing fell back."""
        return self.samples > 0 and not self.failures and not self.fell_back


def run_op(op: Any, dtype: torch.dtype, max_samples: Optional[int] = None) -> Outcome:
    out = Outcome()
    if dtype not in op.supported_dtypes("cpu") or skipped_by_pytorch(op, dtype):
        return out
    for i, sample in enumerate(op.reference_inputs("cpu", dtype, requires_grad=False)):
        if max_samples is not None and i >= max_samples:
            break
        args = (sample.input, *sample.args)
        if any(isinstance(t, torch.Tensor) and t.is_complex()
               for t in tree_flatten((args, sample.kwargs))[0]):
            continue  # a complex tensor cannot be moved to the device (docs/torch.md)
        try:
            expected = op(*args, **sample.kwargs)
        except Exception:  # noqa: BLE001 - a sample the CPU refuses is not one to compare
            continue
        if any(isinstance(t, torch.Tensor) and t.is_complex() for t in tree_flatten(expected)[0]):
            continue  # nor can a complex result be on the device
        before = torch_neuronx.get_device_ops()
        before_fallback = fallback_calls_by_reason()
        out.samples += 1
        try:
            got = op(*tree_map(to_neuron, args), **tree_map(to_neuron, sample.kwargs))
            got = tree_map(to_cpu, got)
            atol, rtol = TOLERANCES[dtype]
            torch.testing.assert_close(got, expected, atol=atol, rtol=rtol, equal_nan=True,
                                       check_device=False)
        except Exception as e:  # noqa: BLE001 - every failure is reported
            first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
            out.failures.append(f"sample {i}: {type(e).__name__}: {first}")
        after = torch_neuronx.get_device_ops()
        out.device_ops |= {k for k, n in after.items() if n > before.get(k, 0)}
        fell_back = {k for k, n in fallback_calls_by_reason().items()
                     if n > before_fallback.get(k, 0)}
        out.fell_back |= fell_back
        out.on_device_samples += not fell_back
    return out


def opinfo_id(op: Any) -> str:
    """The OpInfo's name with its variant, as PyTorch's test ids spell it."""
    return f"{op.name}.{op.variant_test_name}" if op.variant_test_name else op.name


def main() -> int:
    """Every comparable OpInfo, fp32 and bf16: the pass rate, and the
    OpInfos whose every sample ran on the device (nothing fell back) and
    matched the CPU, the candidates for claimed_ops.txt."""
    pairs = matched = on_device = 0
    ops_on_device: Dict[str, bool] = {}
    failing: Dict[str, List[str]] = {}
    for op in op_db:
        if not comparable(op):
            continue
        for dtype in DTYPES:
            print(f"{opinfo_id(op)} {dtype}", file=sys.stderr, flush=True)
            o = run_op(op, dtype)
            if o.samples == 0:
                continue
            pairs += 1
            if o.failures:
                failing[f"{opinfo_id(op)}[{dtype}]"] = o.failures
            else:
                matched += 1
            on_device += o.on_device
            ops_on_device[opinfo_id(op)] = ops_on_device.get(opinfo_id(op), True) and o.on_device
    for name, f in sorted(failing.items()):
        print(f"FAIL {name}: {f[0]}")
    claimed = sorted(k for k, v in ops_on_device.items() if v)
    aten = {next(aten_name(op) for op in op_db if opinfo_id(op) == k) for k in claimed}
    print(f"OpInfo (op, dtype) pairs matching the CPU: {matched}/{pairs} "
          f"({100.0 * matched / pairs:.1f}%); entirely on the device: {on_device}/{pairs} "
          f"({100.0 * on_device / pairs:.1f}%)")
    print(f"OpInfos entirely on the device, fp32 and bf16: {len(claimed)} "
          f"({len(aten)} distinct ATen operators)")
    print("\n".join(claimed))
    fb = torch_neuronx.get_fallback_ops()
    print(f"ATen operators that fell back to the CPU: {len(fb)}")
    return 0 if not failing else 1


if __name__ == "__main__":
    sys.exit(main())
