# SPDX-License-Identifier: MIT
"""torch.optim's fused Adam and AdamW (`fused=True`: `aten::_fused_adam_`,
`aten::_fused_adamw_`) on the device: one program per group of
parameters, which reads each parameter, gradient and moment once and
writes the parameter and the moments into their tensors (the program
reads every byte before it writes it, so the job binds them as its
outputs: libneuron's in_place_slots). The foreach form makes eight
passes over the data, a job each.

The arithmetic is PyTorch's fused kernel's (aten/src/ATen/native/cpu/
FusedAdamKernel.cpp), per element in float32: the gradient unscaled by
`grad_scale` and negated for `maximize`; weight decay added to the
gradient (Adam) or the parameter scaled by 1 - lr * weight_decay (AdamW);
exp_avg = lerp(exp_avg, grad, 1 - beta1) (in lerp's form for that
weight); exp_avg_sq = exp_avg_sq * beta2
+ (1 - beta2) * grad * grad; param -= lr / bc1 * exp_avg /
(sqrt(exp_avg_sq) / sqrt(bc2) + eps), with exp_avg_sq's running maximum
for `amsgrad`. The bias corrections bc = 1 - beta ** step come from the
step tensors on the device, as -expm1(step * log(beta)) (log(beta) in
double on the host), which keeps their digits where 1 - beta is small.
A `found_inf` other than 0 leaves every tensor as it was. The numbers are
program inputs, so a scheduler's new learning rate compiles nothing.

Lists the program does not take (dtypes other than float32, strided
tensors, steps on the host) run as the same arithmetic in float32
operator by operator on the device, each result rounded once to its
tensor's dtype, as PyTorch's kernel does."""

from __future__ import annotations

import math
from typing import Any, Dict, List, Optional, Sequence

import torch

from . import kernels
from .foreach import GROUP_BINDINGS

_aten = torch.library.Library("aten", "IMPL")  # noqa: TOR901

# What the program takes as numbers, each computed in double on the host
# as PyTorch's kernel computes it (1 - beta2 in float32 would be 1.3e-5 off).
_NUMBERS = ("lr", "beta1", "one_minus_beta1", "beta2", "one_minus_beta2", "log_beta1",
            "log_beta2", "weight_decay", "decay", "eps")


def _update(p: torch.Tensor, g: torch.Tensor, m: torch.Tensor, v: torch.Tensor,
            max_v: Optional[torch.Tensor], step: torch.Tensor, n: Dict[str, torch.Tensor],
            grad_scale: Optional[torch.Tensor], found_inf: Optional[torch.Tensor], *,
            adamw: bool, amsgrad: bool, maximize: bool, small_weight: bool) -> List[torch.Tensor]:
    """One parameter's new parameter, moments (and maximum, and unscaled
    gradient where they change); @p n the numbers, each a [1] tensor."""
    grad = g / grad_scale if grad_scale is not None else g
    unscaled = grad
    if maximize:
        grad = -grad
    param = p
    if adamw:
        param = param * n["decay"]
    else:
        grad = grad + param * n["weight_decay"]
    # lerp's two forms, chosen by its weight as lerp chooses per element
    # (the weight is one number; a lerp of a [1] weight would broadcast it)
    exp_avg = (m + n["one_minus_beta1"] * (grad - m) if small_weight
               else grad - (grad - m) * n["beta1"])
    exp_avg_sq = v * n["beta2"] + n["one_minus_beta2"] * grad * grad
    bias_correction1 = -torch.expm1(step * n["log_beta1"])
    bias_correction2 = -torch.expm1(step * n["log_beta2"])
    second = exp_avg_sq
    new_max = None
    if amsgrad:
        assert max_v is not None
        new_max = torch.maximum(max_v, exp_avg_sq)
        second = new_max
    denom = second.sqrt() / bias_correction2.sqrt() + n["eps"]
    param = param - n["lr"] / bias_correction1 * exp_avg / denom
    results = [param, exp_avg, exp_avg_sq] + ([new_max] if new_max is not None else [])
    if grad_scale is not None:
        results.append(unscaled)
    if found_inf is not None:
        keep = found_inf != 0
        old = [p, m, v] + ([max_v] if new_max is not None else []) + (
            [g] if grad_scale is not None else [])
        results = [torch.where(keep, o, r) for o, r in zip(old, results)]
    return results


def _log(beta: float) -> float:
    # (beta 0: -inf, whose bias correction -expm1(-inf) is 1, as 1 - 0 ** step)
    return math.log(beta) if beta > 0 else -math.inf


def _group(args: Dict[str, Any], start: int, stop: int) -> Dict[str, Any]:
    return {k: v[start:stop] if isinstance(v, list) else v for k, v in args.items()}


def _run_group(a: Dict[str, Any], adamw: bool) -> None:
    """Updates one group's tensors in place."""
    params: List[torch.Tensor] = a["params"]
    amsgrad, maximize = a["amsgrad"], a["maximize"]
    scale, found = a["grad_scale"], a["found_inf"]
    device = params[0].device
    lr, beta1, beta2, weight_decay = a["lr"], a["beta1"], a["beta2"], a["weight_decay"]
    numbers = {"lr": lr, "beta1": beta1, "one_minus_beta1": 1 - beta1, "beta2": beta2,
               "one_minus_beta2": 1 - beta2, "log_beta1": _log(beta1),
               "log_beta2": _log(beta2), "weight_decay": weight_decay,
               "decay": 1 - lr * weight_decay, "eps": a["eps"]}
    per_tensor = [params, a["grads"], a["exp_avgs"], a["exp_avg_sqs"]] + (
        [a["max_exp_avg_sqs"]] if amsgrad else []) + [a["steps"]]
    written = [params, a["exp_avgs"], a["exp_avg_sqs"]] + (
        [a["max_exp_avg_sqs"]] if amsgrad else []) + ([a["grads"]] if scale is not None else [])
    flags = dict(adamw=adamw, amsgrad=amsgrad, maximize=maximize,
                 small_weight=abs(1 - a["beta1"]) < 0.5)
    count = len(params)
    lists = len(per_tensor)

    def program(*flat: torch.Tensor) -> List[torch.Tensor]:
        tensors, rest = flat[:count * lists], list(flat[count * lists:])
        n = {name: rest.pop(0) for name in _NUMBERS}
        grad_scale = rest.pop(0) if scale is not None else None
        found_inf = rest.pop(0) if found is not None else None
        outs: List[List[torch.Tensor]] = [[] for _ in written]
        for i in range(count):
            t = [tensors[k * count + i] for k in range(lists)]
            p, g, m, v = t[:4]
            max_v = t[4] if amsgrad else None
            for out, r in zip(outs, _update(p, g, m, v, max_v, t[-1], n, grad_scale, found_inf,
                                            **flags)):
                out.append(r)
        return [r for out in outs for r in out]

    def as_input(t: torch.Tensor) -> torch.Tensor:
        return t.reshape(1) if t.dim() == 0 else t

    inputs = [as_input(t) for lst in per_tensor for t in lst]
    inputs += [torch.ops.neuron.number_on_device(float(numbers[k]), device) for k in _NUMBERS]
    inputs += [as_input(t).to(device, torch.float32) for t in (scale, found) if t is not None]
    entry: Any = None
    if all(t.dtype == torch.float32 and t.is_contiguous() and t.device == device
           for t in inputs):
        key = ("fused_adam", tuple(sorted(flags.items())), scale is not None,
               found is not None, tuple(tuple(t.shape) for t in inputs))
        entry = kernels.kernel_of_function(key, "fused_adamw" if adamw else "fused_adam",
                                           program, lambda: [torch.zeros(t.shape) for t in inputs])
    outputs = [t for lst in written for t in lst]
    if isinstance(entry, kernels.Kernel):
        kernels.count_device_op(torch.ops.aten._fused_adamw_.default if adamw
                                else torch.ops.aten._fused_adam_.default)
        if not entry.kernel.run_into(inputs, outputs):
            for dst, src in zip(outputs, entry.kernel.run(inputs)):
                dst.copy_(src.view(dst.shape))
        return
    # Operator by operator on the device, in float32 (as PyTorch's kernel
    # computes other dtypes), each result rounded once to its tensor's dtype.
    n = {k: torch.tensor(float(v), device=device) for k, v in numbers.items()}
    f32 = [None if t is None else t.float() for t in (scale, found)]
    with torch.no_grad():
        for i in range(count):
            t = [lst[i].float() for lst in per_tensor]
            max_v = t[4] if amsgrad else None
            results = _update(t[0], t[1], t[2], t[3], max_v, t[-1], n, f32[0], f32[1], **flags)
            for dst, src in zip([lst[i] for lst in written], results):
                dst.copy_(src)


def _fused(adamw: bool) -> Any:
    def run(params: Sequence[torch.Tensor], grads: Sequence[torch.Tensor],
            exp_avgs: Sequence[torch.Tensor], exp_avg_sqs: Sequence[torch.Tensor],
            max_exp_avg_sqs: Sequence[torch.Tensor], state_steps: Sequence[torch.Tensor], *,
            lr: Any, beta1: float, beta2: float, weight_decay: float, eps: float,
            amsgrad: bool, maximize: bool, grad_scale: Optional[torch.Tensor] = None,
            found_inf: Optional[torch.Tensor] = None) -> None:
        lists = [params, grads, exp_avgs, exp_avg_sqs, state_steps] + (
            [max_exp_avg_sqs] if amsgrad else [])
        if any(len(x) != len(params) for x in lists):
            raise RuntimeError(f"_fused_adam{'w' if adamw else ''}_: its tensor lists must "
                               f"have one length, not {[len(x) for x in lists]}")
        if not params:
            return
        args: Dict[str, Any] = dict(
            params=list(params), grads=list(grads), exp_avgs=list(exp_avgs),
            exp_avg_sqs=list(exp_avg_sqs), max_exp_avg_sqs=list(max_exp_avg_sqs),
            steps=list(state_steps), lr=float(lr), beta1=beta1, beta2=beta2,
            weight_decay=weight_decay, eps=eps, amsgrad=amsgrad, maximize=maximize,
            grad_scale=grad_scale, found_inf=found_inf)
        per_tensor = 5 + 3 + (2 if amsgrad else 0) + (1 if grad_scale is not None else 0)
        size = max(1, (GROUP_BINDINGS - len(_NUMBERS) - 2) // per_tensor)
        for start in range(0, len(params), size):
            _run_group(_group(args, start, start + size), adamw)
    return run


def install() -> None:
    """Registers the kernels at the device's key (once, at import)."""
    for adamw in (False, True):
        name = "_fused_adamw_" if adamw else "_fused_adam_"
        _aten.impl(name, _fused(adamw), "PrivateUse1")
        _aten.impl(name + ".tensor_lr", _fused(adamw), "PrivateUse1")


install()
