# SPDX-License-Identifier: MIT
"""Conformance against PyTorch's own test data: every OpInfo of op_db
whose ATen operator the device lowers (torch_neuronx.SUPPORTED_OPERATORS)
runs all its fp32 and bf16 reference inputs on `neuron`, without falling
back to the CPU, each matching the CPU within PyTorch's tolerances
(opinfo_run.TOLERANCES). The long form over every OpInfo, with the pass
rate and the OpInfos run entirely on the device: `python opinfo_run.py`
(docs/torch.md)."""

from typing import Any, Dict, List, Tuple

import pytest
import torch

import torch_neuronx
from opinfo_run import DTYPES, aten_name, claimed_opinfos, opinfo_id, run_op

# OpInfos of lowered operators that exercise forms the device does not run
# (each falls back to the CPU, counted), with the reason.
NOT_CLAIMED: Dict[str, str] = {
    "div.trunc_rounding": "div's rounding_mode needs a float-to-integer conversion",
    "div.floor_rounding": "div's rounding_mode needs a float-to-integer conversion",
    "max.reduction_with_dim": "its indices are int64, which the device does not compute",
    "min.reduction_with_dim": "its indices are int64, which the device does not compute",
    "norm.nuc": "the nuclear norm is a sum of singular values (an SVD)",
    "masked_fill": "a 0-dimensional value tensor on the device runs on the CPU: its kernel is "
                   "compiled for [1], which masked_fill.Tensor refuses",
    "repeat": "a 0-dimensional input runs on the CPU: its kernel is compiled for [1], which "
              "repeat's sizes do not fit",
    "select_scatter": "a 0-dimensional src runs on the CPU: its kernel is compiled for [1], "
                      "which is not the shape of a selected element",
    "permute_copy": "a 0-dimensional input runs on the CPU: its kernel is compiled for [1], "
                    "which an empty permutation does not fit (test_copies.py runs the others)",
    "index_add": "every sample's index is int64, which runs on the CPU; int32 ids run on the "
                 "device (test_random.py)",
    "index_select": "its samples gather along dims other than 0 and from 0-dimensional tensors, "
                    "which run on the CPU; along dim 0 it runs on the device with int64 and "
                    "int32 ids (test_embedding.py)",
}

# Claimed forms that do not yet match, as strict expected failures (one
# that starts to pass fails the suite, to be moved out of here).
KNOWN_MISMATCHES: Dict[Tuple[str, torch.dtype], str] = {
    ("native_layer_norm", torch.bfloat16): "a row of one element normalizes to 0 exactly, "
                                           "which the device gives; the CPU's bfloat16 kernel "
                                           "gives 1.04e-3",
    **{("pow", dtype): "pow of tensors is exp(y ln x): NaN for 0 ** 0, negative bases and "
                       "infinite operands, where torch gives numbers"
       for dtype in DTYPES},
}

CLAIMED: List[Any] = [op for op in claimed_opinfos() if opinfo_id(op) not in NOT_CLAIMED]

# Why a sample of a claimed operator may run on the CPU: a program has no
# empty operands or results (a call whose results are all empty needs no
# program); float64, complex and integer inputs (a sample mixing dtypes)
# run on the CPU by design.
ALLOWED_FALLBACKS = ("an input is empty", "the result is empty", "not torch.float64",
                     "not torch.complex", "not torch.int")


def test_the_claimed_operators_have_opinfos():
    # An OpInfo for most lowered operators; without one a typo in the
    # mapping would silently test nothing.
    names = {f"aten::{aten_name(op)}" for op in CLAIMED}
    assert len(names) >= len(torch_neuronx.SUPPORTED_OPERATORS) // 2, sorted(names)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("op", CLAIMED, ids=opinfo_id)
def test_claimed_operator_matches_the_cpu(op: Any, dtype: torch.dtype, request: Any):
    known = KNOWN_MISMATCHES.get((opinfo_id(op), dtype))
    if known:
        request.applymarker(pytest.mark.xfail(reason=known, strict=True))
    outcome = run_op(op, dtype)
    if outcome.samples == 0:
        pytest.skip(f"{op.name} has no {dtype} sample the CPU runs")
    assert not outcome.failures, "\n".join(outcome.failures)
    unexpected = sorted(f"{name} ({why})" for name, why in outcome.fell_back
                        if not any(a in why for a in ALLOWED_FALLBACKS))
    assert not unexpected, "ran on the CPU: " + "; ".join(unexpected)
    # (every sample may have run on the CPU for an allowed reason, which
    # tests nothing of the device)
    assert outcome.on_device_samples, f"no {dtype} sample of {op.name} ran on the device"
