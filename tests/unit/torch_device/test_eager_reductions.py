# SPDX-License-Identifier: MIT
"""Reductions on the neuron device, eagerly: sum, mean, amax, var and the
softmax backward kernel run on the device (not the CPU fallback), 0-dimensional
results included, within the compiler's bounds against torch on the CPU."""

import torch

import torch_neuronx

REDUCE_SUM_REL = 1e-5  # hw/isa.md section 6: |err| <= 1e-5 * sum |x|


def test_reductions_run_on_the_device() -> None:
    x = torch.randn(200, 130, generator=torch.Generator().manual_seed(5))
    d = x.to("neuron")
    before = torch_neuronx.get_device_ops()
    fallbacks = dict(torch_neuronx.get_fallback_ops())
    total, mean, rows, top = d.sum(), d.mean(), d.sum(0), d.amax(-1, keepdim=True)
    assert total.shape == () and mean.shape == () and rows.shape == (130,)
    magnitude = x.double().abs()
    # docs/compiler.md, "Numerics": the 200 rows folded and added in fp32
    # (depth 7 in a row tile, one more for the second: gamma_8), then for
    # every axis the row of partial sums rounded and REDUCE'd; a mean's
    # division correctly rounded
    u = 2.0 ** -24
    gamma = 8 * u / (1 - 8 * u)
    every = gamma + u + REDUCE_SUM_REL * (1 + u + gamma)
    assert abs(total.cpu().item() - x.double().sum().item()) <= \
        every * magnitude.sum().item() + u * abs(x.double().sum().item())
    every_mean = (gamma + u) + u + (REDUCE_SUM_REL + u) * (1 + u + gamma + u)
    assert abs(mean.cpu().item() - x.double().mean().item()) <= \
        every_mean * magnitude.mean().item() + u * abs(x.double().mean().item())
    assert ((rows.cpu().double() - x.double().sum(0)).abs()
            <= gamma * magnitude.sum(0) + u * x.double().sum(0).abs()).all()
    assert torch.equal(top.cpu(), x.amax(-1, keepdim=True))
    v = d.var()
    assert v.shape == ()
    y = torch.softmax(x, -1)
    g = torch.ops.aten._softmax_backward_data(x.to("neuron"), y.to("neuron"), -1, torch.float32)
    assert g.shape == x.shape
    after = torch_neuronx.get_device_ops()

    def calls_of(counts: dict, name: str) -> int:  # over the operator's overloads
        return sum(n for op, n in counts.items() if op.split(".")[0] == name)
    for op, calls in (("aten::sum", 2), ("aten::mean", 1), ("aten::amax", 1),
                      ("aten::var", 1), ("aten::_softmax_backward_data", 1)):
        assert calls_of(after, op) - calls_of(before, op) == calls, (op, after)
    assert torch_neuronx.get_fallback_ops() == fallbacks


def test_log_softmax_runs_on_the_device_and_stays_finite() -> None:
    # Rows of moderate logits and rows 400 apart, whose smallest
    # probabilities underflow: log_softmax is x - max - log(sum(exp(x - max))),
    # finite where log(softmax(x)) would be -inf. The bound: the compiler's
    # decomposition in fp32 (exp and log within 1e-5 relative, hw/isa.md).
    g = torch.Generator().manual_seed(7)
    for scale in (1.0, 200.0):
        x = torch.randn(33, 1000, generator=g) * scale
        before = torch_neuronx.get_device_ops().get("aten::_log_softmax", 0)
        got = torch.log_softmax(x.to("neuron"), -1).cpu()
        assert torch_neuronx.get_device_ops().get("aten::_log_softmax", 0) == before + 1
        assert torch.isfinite(got).all()
        want = torch.log_softmax(x.double(), -1)
        torch.testing.assert_close(got.double(), want, rtol=1e-5, atol=1e-4)
