# SPDX-License-Identifier: MIT
"""``aten::nll_loss_forward`` and ``aten::nll_loss_backward`` (the end of
``cross_entropy``) on the device, for log-probabilities [N, C] in float32
or bfloat16 and PyTorch's int64 class indices [N].

The device has no int64, and no gather by index; it adds rows at int32
ids (DMA_SCATTER_ADD, ``neuron::embedding_backward``). The targets are
read to the host and checked as the CPU checks them (``IndexError:
Target 7 is out of bounds.``), then each row's weight (1, or the class
weight, and 0 where the target is ``ignore_index``) is added at the flat
position ``n * C + target[n]`` of zeros [N * C]: the matrix W of the
weights at the targets. The loss is then ``-sum(W * x)`` over the
classes (of ``where(W != 0, x, 0)``: a log-probability of -inf at another
class does not make 0 * -inf), divided by ``sum(W)`` for the mean, and
its gradient ``-W * grad`` (divided the same way): both exact picks, as
the CPU's. The flat ids are int32: N * C must stay below 2^31."""

from __future__ import annotations

from typing import Optional, Tuple

import torch

from . import philox  # noqa: F401 (defines torch.ops.neuron.embedding_backward)
from .eager import fallback, kernels

_aten = torch.library.Library("aten", "IMPL")  # noqa: TOR901
_REDUCTIONS = {0: "none", 1: "mean", 2: "sum"}
_INT32_IDS = 1 << 31


def _why_not(x: torch.Tensor, target: torch.Tensor, weight: Optional[torch.Tensor],
             reduction: int) -> Optional[str]:
    """Why the device cannot take this call (then it runs on the CPU)."""
    if x.dtype not in (torch.float32, torch.bfloat16):
        return f"{x.dtype} log-probabilities"
    if x.dim() != 2 or target.dim() != 1 or x.shape[0] != target.shape[0]:
        return f"log-probabilities {list(x.shape)} and targets {list(target.shape)} " \
               "(the device takes [N, C] and [N])"
    if x.numel() == 0:
        return "an empty input"
    if x.numel() >= _INT32_IDS:
        return f"{x.numel()} log-probabilities (the device's flat ids are int32)"
    if weight is not None and (weight.dtype != x.dtype or weight.shape != (x.shape[1],)):
        return f"a class weight {weight.dtype} {list(weight.shape)}"
    if reduction not in _REDUCTIONS:
        return f"reduction {reduction}"
    return None


def _weights_at_targets(x: torch.Tensor, target: torch.Tensor, weight: Optional[torch.Tensor],
                        ignore_index: int) -> torch.Tensor:
    """W [N, C] on the device: each row's weight at its target, else 0;
    the targets checked on the host (IndexError as on the CPU)."""
    n, c = x.shape
    t = target.cpu()
    kept = t != ignore_index
    bad = kept & ((t < 0) | (t >= c))
    if bool(bad.any()):
        raise IndexError(f"Target {int(t[bad][0])} is out of bounds.")
    ids = torch.arange(n, dtype=torch.int64) * c + torch.where(kept, t, 0)
    rows = kept.to(x.dtype).reshape(n, 1)
    w = torch.ops.neuron.embedding_backward(rows.to(x.device),
                                            ids.to(torch.int32).reshape(n, 1).to(x.device),
                                            n * c).reshape(n, c)
    return w if weight is None else w * weight


def _nll_loss_forward(x: torch.Tensor, target: torch.Tensor, weight: Optional[torch.Tensor],
                      reduction: int, ignore_index: int) -> Tuple[torch.Tensor, torch.Tensor]:
    why = _why_not(x, target, weight, reduction)
    if why is not None:
        return fallback.run_on_cpu(torch.ops.aten.nll_loss_forward.default,
                                   (x, target, weight, reduction, ignore_index), {}, why)
    kernels.count_device_op(torch.ops.aten.nll_loss_forward.default)
    w = _weights_at_targets(x, target, weight, ignore_index)
    picked = torch.where(w != 0, x, 0.0) * w
    if _REDUCTIONS[reduction] == "none":
        return -picked.sum(1), torch.zeros((), dtype=x.dtype, device=x.device)
    total = w.sum()
    loss = -picked.sum()
    return (loss / total if _REDUCTIONS[reduction] == "mean" else loss), total


def _nll_loss_backward(grad: torch.Tensor, x: torch.Tensor, target: torch.Tensor,
                       weight: Optional[torch.Tensor], reduction: int, ignore_index: int,
                       total_weight: torch.Tensor) -> torch.Tensor:
    why = _why_not(x, target, weight, reduction)
    if why is None and grad.dtype != x.dtype:
        why = f"a {grad.dtype} gradient of {x.dtype} log-probabilities"
    if why is not None:
        return fallback.run_on_cpu(torch.ops.aten.nll_loss_backward.default,
                                   (grad, x, target, weight, reduction, ignore_index,
                                    total_weight), {}, why)
    kernels.count_device_op(torch.ops.aten.nll_loss_backward.default)
    w = _weights_at_targets(x, target, weight, ignore_index)
    if _REDUCTIONS[reduction] == "none":
        return w * -grad.reshape(-1, 1)
    scale = -grad / total_weight if _REDUCTIONS[reduction] == "mean" else -grad
    return w * scale.reshape(1, 1)


_aten.impl("nll_loss_forward", _nll_loss_forward, "PrivateUse1")
_aten.impl("nll_loss_backward", _nll_loss_backward, "PrivateUse1")
