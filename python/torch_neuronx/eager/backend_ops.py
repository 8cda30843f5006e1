# SPDX-License-Identifier: MIT
"""The ATen operators PyTorch's own kernels call only for accelerators,
leaving each backend to define them (their CPU forms do not exist, so
the CPU fallback cannot run them as they are):

- `convolution_overrideable` and `convolution_backward_overrideable`,
  which `aten::convolution` calls for a backend other than the CPU's and
  CUDA's: run on the CPU as `convolution` and `convolution_backward`.
- `_thnn_fused_lstm_cell` and `_thnn_fused_gru_cell`, which nn.LSTM,
  nn.GRU and their cells call for an accelerator's tensors: defined at
  the device's autograd key as the cells' arithmetic (the CPU's
  unfused form), so that they run on the device and autograd
  differentiates that arithmetic."""

from __future__ import annotations

from typing import List, Optional, Sequence, Tuple

import torch

from . import fallback

aten = torch.ops.aten
_aten = torch.library.Library("aten", "IMPL")  # noqa: TOR901

_WHY_CONVOLUTION = "the device has no convolution"


def _convolution(x: torch.Tensor, weight: torch.Tensor, bias: Optional[torch.Tensor],
                 stride: Sequence[int], padding: Sequence[int], dilation: Sequence[int],
                 transposed: bool, output_padding: Sequence[int], groups: int) -> torch.Tensor:
    return fallback.run_on_cpu(aten.convolution.default,
                               (x, weight, bias, stride, padding, dilation, transposed,
                                output_padding, groups), {}, _WHY_CONVOLUTION)


def _convolution_backward(grad: torch.Tensor, x: torch.Tensor, weight: torch.Tensor,
                          stride: Sequence[int], padding: Sequence[int],
                          dilation: Sequence[int], transposed: bool,
                          output_padding: Sequence[int], groups: int,
                          output_mask: List[bool]) -> Tuple[torch.Tensor, ...]:
    # the bias's gradient has the output's channels
    channels = weight.shape[1] * groups if transposed else weight.shape[0]
    return fallback.run_on_cpu(aten.convolution_backward.default,
                               (grad, x, weight, [channels], stride, padding, dilation,
                                transposed, output_padding, groups, output_mask), {},
                               _WHY_CONVOLUTION)


def _with_biases(gates: torch.Tensor, bias: Optional[torch.Tensor]) -> torch.Tensor:
    return gates if bias is None else gates + bias


def _lstm_cell(input_gates: torch.Tensor, hidden_gates: torch.Tensor, cx: torch.Tensor,
               input_bias: Optional[torch.Tensor] = None,
               hidden_bias: Optional[torch.Tensor] = None
               ) -> Tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    gates = _with_biases(input_gates, input_bias) + _with_biases(hidden_gates, hidden_bias)
    i, f, g, o = gates.chunk(4, 1)
    i, f, g, o = i.sigmoid(), f.sigmoid(), g.tanh(), o.sigmoid()
    cy = f * cx + i * g
    hy = o * cy.tanh()
    # the workspace: the activated gates (what the fused backward reads)
    return hy, cy, torch.cat([i, f, g, o], 1)


def _gru_cell(input_gates: torch.Tensor, hidden_gates: torch.Tensor, hx: torch.Tensor,
              input_bias: Optional[torch.Tensor] = None,
              hidden_bias: Optional[torch.Tensor] = None) -> Tuple[torch.Tensor, torch.Tensor]:
    ir, ii, in_ = _with_biases(input_gates, input_bias).chunk(3, 1)
    hr, hi, hn = _with_biases(hidden_gates, hidden_bias).chunk(3, 1)
    r = (ir + hr).sigmoid()
    z = (ii + hi).sigmoid()
    n = (in_ + r * hn).tanh()
    hy = n + z * (hx - n)
    # the workspace: what the fused backward reads
    return hy, torch.cat([r, z, n, hx, hn], 1)


_aten.impl("convolution_overrideable", _convolution, "PrivateUse1")
_aten.impl("convolution_backward_overrideable", _convolution_backward, "PrivateUse1")
_aten.impl("_thnn_fused_lstm_cell", _lstm_cell, "AutogradPrivateUse1")
_aten.impl("_thnn_fused_gru_cell", _gru_cell, "AutogradPrivateUse1")
