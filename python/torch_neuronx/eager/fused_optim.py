# SPDX-License-Identifier: MIT
"""torch.optim's fused Adam, AdamW, SGD and Adagrad (`fused=True`:
`aten::_fused_adam_`, `aten::_fused_adamw_`, `aten::_fused_sgd_`,
`aten::_fused_adagrad_`) on the device: one program per group of
parameters, which reads each parameter, gradient and state tensor once
and writes the parameter and its state into their tensors (the program
reads every byte before it writes it, so the job binds them as its
outputs: libneuron's in_place_slots). Adam's foreach form makes eight
passes over the data, a job each.

Adam's arithmetic is PyTorch's fused kernel's (aten/src/ATen/native/cpu/
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
SGD's and Adagrad's are in _sgd_update and _adagrad_update. A
`found_inf` other than 0 leaves every tensor as it was. The numbers are
program inputs, so a scheduler's new learning rate compiles nothing.

Lists the program does not take (dtypes other than float32, strided
tensors, steps on the host) run as the same arithmetic in float32
operator by operator on the device, each result rounded once to its
tensor's dtype, as PyTorch's kernel does."""

from __future__ import annotations

import functools
import math
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import torch

from . import kernels
from .foreach import GROUP_BINDINGS

_aten = torch.library.Library("aten", "IMPL")  # noqa: TOR901

def _kept_if_found(found_inf: Optional[torch.Tensor], old: List[torch.Tensor],
                   results: List[torch.Tensor]) -> List[torch.Tensor]:
    """@p results, or the @p old values where `found_inf` is not 0 (a step
    with an inf or NaN gradient changes nothing)."""
    if found_inf is None:
        return results
    keep = found_inf != 0
    return [torch.where(keep, o, r) for o, r in zip(old, results)]


def _adam_update(t: List[torch.Tensor], n: Dict[str, torch.Tensor],
                 grad_scale: Optional[torch.Tensor], found_inf: Optional[torch.Tensor], *,
                 adamw: bool, amsgrad: bool, maximize: bool,
                 small_weight: bool) -> List[torch.Tensor]:
    """One parameter's new parameter, moments (and maximum, and unscaled
    gradient where they change) from its parameter, gradient, moments (and
    maximum) and step @p t; @p n the numbers, each a [1] tensor."""
    p, g, m, v = t[:4]
    max_v, step = (t[4] if amsgrad else None), t[-1]
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
    old = [p, m, v] + ([max_v] if new_max is not None else []) + (
        [g] if grad_scale is not None else [])
    return _kept_if_found(found_inf, old, results)


def _log(beta: float) -> float:
    # (beta 0: -inf, whose bias correction -expm1(-inf) is 1, as 1 - 0 ** step)
    return math.log(beta) if beta > 0 else -math.inf


Update = Callable[[List[torch.Tensor], Dict[str, torch.Tensor], Optional[torch.Tensor],
                   Optional[torch.Tensor]], List[torch.Tensor]]


def _run_group(op: Any, update: Update, key: Tuple[Any, ...], per_tensor: List[List[Any]],
               written: List[List[torch.Tensor]], numbers: Dict[str, float],
               scale: Optional[torch.Tensor], found: Optional[torch.Tensor]) -> None:
    """Updates one group of parameters in place (the program named
    @p key[0], counted as a device run of @p op): @p update maps one
    parameter's tensors (one of each list of @p per_tensor), the @p numbers
    (each a [1] tensor) and the gradients' scale and inf flag to its new
    values of the lists of @p written."""
    device = per_tensor[0][0].device
    count, lists = len(per_tensor[0]), len(per_tensor)
    names = list(numbers)

    def program(*flat: torch.Tensor) -> List[torch.Tensor]:
        tensors, rest = flat[:count * lists], list(flat[count * lists:])
        n = {name: rest.pop(0) for name in names}
        grad_scale = rest.pop(0) if scale is not None else None
        found_inf = rest.pop(0) if found is not None else None
        outs: List[List[torch.Tensor]] = [[] for _ in written]
        for i in range(count):
            results = update([tensors[k * count + i] for k in range(lists)], n, grad_scale,
                             found_inf)
            for out, r in zip(outs, results):
                out.append(r)
        return [r for out in outs for r in out]

    def as_input(t: torch.Tensor) -> torch.Tensor:
        return t.reshape(1) if t.dim() == 0 else t

    inputs = [as_input(t) for lst in per_tensor for t in lst]
    inputs += [torch.ops.neuron.number_on_device(float(numbers[k]), device) for k in names]
    inputs += [as_input(t).to(device, torch.float32) for t in (scale, found) if t is not None]
    entry: Any = None
    if all(t.dtype == torch.float32 and t.is_contiguous() and t.device == device
           for t in inputs):
        entry = kernels.kernel_of_function(
            key + (scale is not None, found is not None, tuple(tuple(t.shape) for t in inputs)),
            key[0], program,
            lambda: [torch.zeros(t.shape) for t in inputs])
    outputs = [t for lst in written for t in lst]
    if isinstance(entry, kernels.Kernel):
        kernels.count_device_op(op)
        if not entry.kernel.run_into(inputs, outputs):
            for dst, src in zip(outputs, entry.kernel.run(inputs)):
                dst.copy_(src.view(dst.shape))
        return
    # Operator by operator on the device, in float32 (as PyTorch's kernels
    # compute other dtypes), each result rounded once to its tensor's dtype.
    n = {k: torch.tensor(float(v), device=device) for k, v in numbers.items()}
    f32 = [None if t is None else t.float() for t in (scale, found)]
    with torch.no_grad():
        for i in range(count):
            results = update([lst[i].float() for lst in per_tensor], n, f32[0], f32[1])
            for dst, src in zip([lst[i] for lst in written], results):
                dst.copy_(src)


def _in_groups(per_tensor: List[List[Any]], written: List[List[torch.Tensor]], numbers: int,
               run: Callable[[List[List[Any]], List[List[torch.Tensor]]], None]) -> None:
    """Calls @p run on groups of parameters whose program binds at most
    GROUP_BINDINGS tensors (two for the gradients' scale and inf flag)."""
    size = max(1, (GROUP_BINDINGS - numbers - 2) // (len(per_tensor) + len(written)))
    for start in range(0, len(per_tensor[0]), size):
        run([lst[start:start + size] for lst in per_tensor],
            [lst[start:start + size] for lst in written])


def _run_fused(op: Any, name: str, update: Callable[..., List[torch.Tensor]],
               flags: Dict[str, bool], per_tensor: List[List[Any]],
               written: List[List[torch.Tensor]], numbers: Dict[str, float],
               grad_scale: Optional[torch.Tensor], found_inf: Optional[torch.Tensor]) -> None:
    """One fused optimizer call: @p update (with @p flags) over its groups,
    programs named @p name and kept under its flags."""
    bound: Update = functools.partial(update, **flags)
    key = (name, tuple(sorted(flags.items())))
    _in_groups(per_tensor, written, len(numbers),
               lambda p, w: _run_group(op, bound, key, p, w, numbers, grad_scale, found_inf))


def _check_lengths(name: str, lists: Sequence[Sequence[Any]]) -> None:
    if any(len(x) != len(lists[0]) for x in lists):
        raise RuntimeError(f"{name}: its tensor lists must have one length, not "
                           f"{[len(x) for x in lists]}")


def _fused(adamw: bool) -> Any:
    op = torch.ops.aten._fused_adamw_.default if adamw else torch.ops.aten._fused_adam_.default

    def run(params: Sequence[torch.Tensor], grads: Sequence[torch.Tensor],
            exp_avgs: Sequence[torch.Tensor], exp_avg_sqs: Sequence[torch.Tensor],
            max_exp_avg_sqs: Sequence[torch.Tensor], state_steps: Sequence[torch.Tensor], *,
            lr: Any, beta1: float, beta2: float, weight_decay: float, eps: float,
            amsgrad: bool, maximize: bool, grad_scale: Optional[torch.Tensor] = None,
            found_inf: Optional[torch.Tensor] = None) -> None:
        _check_lengths(f"_fused_adam{'w' if adamw else ''}_",
                       [params, grads, exp_avgs, exp_avg_sqs, state_steps] + (
                           [max_exp_avg_sqs] if amsgrad else []))
        if not params:
            return
        lr = float(lr)
        # Each computed in double on the host as PyTorch's kernel computes
        # it (1 - beta2 in float32 would be 1.3e-5 off).
        numbers = {"lr": lr, "beta1": beta1, "one_minus_beta1": 1 - beta1, "beta2": beta2,
                   "one_minus_beta2": 1 - beta2, "log_beta1": _log(beta1),
                   "log_beta2": _log(beta2), "weight_decay": weight_decay,
                   "decay": 1 - lr * weight_decay, "eps": eps}
        moments = [list(exp_avgs), list(exp_avg_sqs)] + ([list(max_exp_avg_sqs)] if amsgrad
                                                         else [])
        per_tensor = [list(params), list(grads)] + moments + [list(state_steps)]
        written = [list(params)] + moments + ([list(grads)] if grad_scale is not None else [])
        flags = dict(adamw=adamw, amsgrad=amsgrad, maximize=maximize,
                     small_weight=abs(1 - beta1) < 0.5)
        _run_fused(op, "fused_adamw" if adamw else "fused_adam", _adam_update, flags,
                   per_tensor, written, numbers, grad_scale, found_inf)
    return run


def _sgd_update(t: List[torch.Tensor], n: Dict[str, torch.Tensor],
                grad_scale: Optional[torch.Tensor], found_inf: Optional[torch.Tensor], *,
                momentum: bool, first: bool, nesterov: bool, maximize: bool,
                decay: bool) -> List[torch.Tensor]:
    """One parameter's new parameter (and momentum buffer, and unscaled
    gradient where they change), as PyTorch's fused SGD computes them
    (aten/src/ATen/native/cpu/FusedSGDKernel.cpp): the gradient unscaled,
    negated for `maximize`, plus param * weight_decay; the buffer is the
    gradient at the first step, else buffer * momentum + (1 - dampening) *
    gradient; the step is the buffer (or gradient + buffer * momentum,
    nesterov); param + step * -lr."""
    p, g = t[0], t[1]
    grad = g / grad_scale if grad_scale is not None else g
    unscaled = grad
    if maximize:
        grad = -grad
    if decay:
        grad = p * n["weight_decay"] + grad
    results = []
    if momentum:
        buf = grad if first else t[2] * n["momentum"] + n["one_minus_dampening"] * grad
        grad = buf * n["momentum"] + grad if nesterov else buf
        results.append(buf)
    results.insert(0, p + grad * n["minus_lr"])
    if grad_scale is not None:
        results.append(unscaled)
    old = [p] + ([t[2]] if momentum else []) + ([g] if grad_scale is not None else [])
    return _kept_if_found(found_inf, old, results)


def _fused_sgd(params: Sequence[torch.Tensor], grads: Sequence[torch.Tensor],
               momentum_buffer_list: Sequence[torch.Tensor], *, weight_decay: float,
               momentum: float, lr: Any, dampening: float, nesterov: bool, maximize: bool,
               is_first_step: bool, grad_scale: Optional[torch.Tensor] = None,
               found_inf: Optional[torch.Tensor] = None) -> None:
    op = torch.ops.aten._fused_sgd_.default
    lists = [params, grads] + ([momentum_buffer_list] if momentum != 0 else [])
    _check_lengths("_fused_sgd_", lists)
    if not params:
        return
    numbers = {"minus_lr": -float(lr), "weight_decay": weight_decay, "momentum": momentum,
               "one_minus_dampening": 1 - dampening}
    per_tensor = [list(x) for x in lists]
    written = [list(params)] + ([list(momentum_buffer_list)] if momentum != 0 else []) + (
        [list(grads)] if grad_scale is not None else [])
    flags = dict(momentum=momentum != 0, first=is_first_step, nesterov=nesterov,
                 maximize=maximize, decay=weight_decay != 0)
    _run_fused(op, "fused_sgd", _sgd_update, flags, per_tensor, written, numbers, grad_scale,
               found_inf)


def _adagrad_update(t: List[torch.Tensor], n: Dict[str, torch.Tensor],
                    grad_scale: Optional[torch.Tensor], found_inf: Optional[torch.Tensor], *,
                    maximize: bool, decay: bool) -> List[torch.Tensor]:
    """One parameter's new parameter and sum (and unscaled gradient), as
    PyTorch's fused Adagrad computes them (aten/src/ATen/native/cpu/
    FusedAdagradKernel.cpp): the gradient unscaled, negated for `maximize`,
    plus param * weight_decay; sum + grad * grad; param - clr * grad /
    (sqrt(sum) + eps), clr = lr / (1 + (step - 1) * lr_decay) from the
    step tensor (in float32 here, in double there)."""
    p, g, state_sum, step = t
    grad = g / grad_scale if grad_scale is not None else g
    unscaled = grad
    if maximize:
        grad = -grad
    if decay:
        grad = grad + p * n["weight_decay"]
    new_sum = state_sum + grad * grad
    clr = n["lr"] / ((step - 1) * n["lr_decay"] + 1)
    results = [p - clr * grad / (new_sum.sqrt() + n["eps"]), new_sum]
    if grad_scale is not None:
        results.append(unscaled)
    old = [p, state_sum] + ([g] if grad_scale is not None else [])
    return _kept_if_found(found_inf, old, results)


def _fused_adagrad(params: Sequence[torch.Tensor], grads: Sequence[torch.Tensor],
                   state_sums: Sequence[torch.Tensor], state_steps: Sequence[torch.Tensor], *,
                   lr: Any, lr_decay: float, weight_decay: float, eps: float, maximize: bool,
                   grad_scale: Optional[torch.Tensor] = None,
                   found_inf: Optional[torch.Tensor] = None) -> None:
    op = torch.ops.aten._fused_adagrad_.default
    per_tensor = [list(params), list(grads), list(state_sums), list(state_steps)]
    _check_lengths("_fused_adagrad_", per_tensor)
    if not params:
        return
    numbers = {"lr": float(lr), "lr_decay": lr_decay, "weight_decay": weight_decay, "eps": eps}
    written = [list(params), list(state_sums)] + ([list(grads)] if grad_scale is not None
                                                  else [])
    flags = dict(maximize=maximize, decay=weight_decay != 0)
    _run_fused(op, "fused_adagrad", _adagrad_update, flags, per_tensor, written, numbers,
               grad_scale, found_inf)


def install() -> None:
    """Registers the kernels at the device's key (once, at import)."""
    for adamw in (False, True):
        name = "_fused_adamw_" if adamw else "_fused_adam_"
        _aten.impl(name, _fused(adamw), "PrivateUse1")
        _aten.impl(name + ".tensor_lr", _fused(adamw), "PrivateUse1")
    for name, fn in (("_fused_sgd_", _fused_sgd), ("_fused_adagrad_", _fused_adagrad)):
        _aten.impl(name, fn, "PrivateUse1")
        _aten.impl(name + ".tensor_lr", fn, "PrivateUse1")


install()
