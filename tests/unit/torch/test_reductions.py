# SPDX-License-Identifier: MIT
"""Reductions (sum, mean, amax, amin, var) and the backward kernels of
softmax and log_softmax traced onto the simulator device (NEURON_DEVICE=sim)
against torch on the CPU in double precision, fp32 and bf16, within the
bounds of hw/isa.md section 6 that the compiler carries for them
(docs/compiler.md, "Numerics")."""

from typing import Callable, List, Sequence, Tuple

import pytest
import torch

import torch_neuronx

MAX_COLS = 16384  # the most elements of a row of the row layout (docs/compiler.md)
REDUCE_SUM_REL = 1e-5  # REDUCE sum: |err| <= 1e-5 * sum |x|
EXP_REL, EXP_ABS = 1e-5, 1e-6  # ACTIVATE exp
UNIT = {torch.float32: 2.0 ** -24, torch.bfloat16: 2.0 ** -8}  # half an ulp, relative

DTYPES = [torch.float32, torch.bfloat16]


def runs(shape: Sequence[int], dims: Sequence[int]) -> int:
    """How many reductions of the last axis the compiler makes of it: the
    runs of consecutive reduced axes, cut at MAX_COLS elements."""
    left = {d % len(shape) for d in (dims or range(len(shape)))}
    count, end = 0, len(shape)
    while end > 0:
        if end - 1 not in left:
            end -= 1
            continue
        first, m = end - 1, shape[end - 1]
        while first > 0 and first - 1 in left and m * shape[first - 1] <= MAX_COLS:
            first -= 1
            m *= shape[first]
        count, end = count + 1, first
    return count


def sum_bound_factor(shape: Sequence[int], dims: Sequence[int], dtype: torch.dtype,
                     mean: bool) -> float:
    """The device's error bound on a sum (mean) as a multiple of the sum
    (mean) of the magnitudes, as the compiler decomposes it
    (docs/compiler.md, "Reductions"): every axis but the last first when
    they are all reduced (fp32 additions: a tree in each row tile of 128
    rows, then one per further tile), else runs of REDUCE sums; each
    partial result but the last rounded to the dtype; each mean's division
    correctly rounded."""
    u, div = UNIT[dtype], 2.0 ** -24 if mean else 0.0
    reduced = {d % len(shape) for d in (dims or range(len(shape)))}
    if len(shape) < 2 or not set(range(len(shape) - 1)) <= reduced:
        k = runs(shape, dims)
        return k * (REDUCE_SUM_REL + div) + (k - 1) * u
    rows = 1
    for s in shape[:-1]:
        rows *= s
    depth, h = (rows + 127) // 128 - 1, min(rows, 128)
    while h > 1:
        depth, h = depth + 1, (h + 1) // 2
    f = depth * 2.0 ** -24 / (1 - depth * 2.0 ** -24) + div
    if len(shape) - 1 in reduced:
        f += u + (REDUCE_SUM_REL + div) * (1 + u + f)
    return f


def traced_run(f: Callable[..., torch.Tensor], *xs: torch.Tensor) -> torch.Tensor:
    return torch_neuronx.trace(f, xs)(*xs)


CASES: List[Tuple[Tuple[int, ...], Tuple[int, ...], bool]] = [
    ((300,), (0,), True),
    ((2, 77), (1,), False),
    ((2, 77), (0,), True),
    ((129, 3), (0, 1), True),  # every axis (without keepdim: 0-dimensional, refused)
    ((200, 130), (0,), False),  # a bias's gradient: the rows summed
    ((3, 129, 5), (0, 2), False),
    ((3, 129, 5), (1,), True),
    ((2, 3, 4, 5), (1, 3), True),
    ((2, 3, 4, 5), (-1, -2), False),
]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape,dims,keepdim", CASES)
def test_sum_and_mean(shape: Tuple[int, ...], dims: Tuple[int, ...], keepdim: bool,
                      dtype: torch.dtype) -> None:
    x = torch.randn(shape, generator=torch.Generator().manual_seed(len(shape))).to(dtype)
    n = 1
    for d in dims:
        n *= shape[d]
    u = UNIT[dtype]
    want = x.double().sum(dims, keepdim=keepdim)
    magnitude = x.double().abs().sum(dims, keepdim=keepdim)
    bound = sum_bound_factor(shape, dims, dtype, False) * magnitude + u * want.abs()
    got = traced_run(lambda t: t.sum(dims, keepdim=keepdim), x)
    assert got.dtype == dtype and got.shape == want.shape
    assert ((got.double() - want).abs() <= bound).all()
    got = traced_run(lambda t: t.mean(dims, keepdim=keepdim), x)
    bound = (sum_bound_factor(shape, dims, dtype, True) * magnitude / n
             + u * (want / n).abs())
    assert got.shape == want.shape
    assert ((got.double() - want / n).abs() <= bound).all()


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape,dims,keepdim", CASES)
def test_amax_amin_exact(shape: Tuple[int, ...], dims: Tuple[int, ...], keepdim: bool,
                         dtype: torch.dtype) -> None:
    x = torch.randn(shape, generator=torch.Generator().manual_seed(7)).to(dtype)
    got = traced_run(lambda t: (t.amax(dims, keepdim=keepdim), t.amin(dims, keepdim=keepdim)), x)
    assert torch.equal(got[0], x.amax(dims, keepdim=keepdim))
    assert torch.equal(got[1], x.amin(dims, keepdim=keepdim))


@pytest.mark.parametrize("dtype", DTYPES)
def test_var(dtype: torch.dtype) -> None:
    x = torch.randn(200, 130, generator=torch.Generator().manual_seed(3)).to(dtype)
    for dim, correction in ((-1, 1), (0, 0)):
        got = traced_run(lambda t: torch.var(t, dim, correction=correction), x)
        want = x.double().var(dim, correction=correction)
        # mean, centre, square, sum, divide: each step's REDUCE or rounding
        # relative to the magnitudes it works on (the squares' sum is want
        # times n - correction)
        u = UNIT[dtype]
        n = x.shape[dim]
        mean_err = (REDUCE_SUM_REL + 2 * u) * x.double().abs().mean(dim, keepdim=True)
        centred = (x.double() - x.double().mean(dim, keepdim=True)).abs()
        sq_err = (2 * centred * mean_err + 3 * u * centred.square()).sum(dim)
        bound = (sq_err + REDUCE_SUM_REL * want * (n - correction)) / (n - correction) \
            + 2 * u * want
        assert ((got.double() - want).abs() <= bound).all()


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(1,), (2, 77), (129, 300), (3, 129, 5)])
def test_softmax_backward(shape: Tuple[int, ...], dtype: torch.dtype) -> None:
    gen = torch.Generator().manual_seed(11)
    y = torch.softmax(torch.randn(shape, generator=gen), -1).to(dtype)
    g = torch.randn(shape, generator=gen).to(dtype)
    got = traced_run(lambda a, b: torch.ops.aten._softmax_backward_data(a, b, -1, dtype), g, y)
    gd, yd, u = g.double(), y.double(), UNIT[dtype]
    gy = gd * yd
    s = gy.sum(-1, keepdim=True)
    want = yd * (gd - s)
    # y * (g - sum(g y)): the product's rounding, the REDUCE, the
    # difference's and the last product's roundings
    s_err = (u + REDUCE_SUM_REL) * gy.abs().sum(-1, keepdim=True) + u * s.abs()
    c_err = s_err + u * (gd - s).abs()
    bound = yd * c_err + u * want.abs()
    assert ((got.double() - want).abs() <= bound).all()


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(1,), (2, 77), (129, 300), (3, 129, 5)])
def test_log_softmax_backward(shape: Tuple[int, ...], dtype: torch.dtype) -> None:
    gen = torch.Generator().manual_seed(12)
    y = torch.log_softmax(torch.randn(shape, generator=gen), -1).to(dtype)
    g = torch.randn(shape, generator=gen).to(dtype)
    got = traced_run(lambda a, b: torch.ops.aten._log_softmax_backward_data(a, b, -1, dtype),
                     g, y)
    gd, yd, u = g.double(), y.double(), UNIT[dtype]
    p, s = yd.exp(), gd.sum(-1, keepdim=True)
    want = gd - p * s
    # g - exp(y) sum(g): exp's bound and rounding, the REDUCE, the
    # product's and the difference's roundings
    p_err = (EXP_REL + u) * p + EXP_ABS
    s_err = REDUCE_SUM_REL * gd.abs().sum(-1, keepdim=True) + u * s.abs()
    m_err = p * s_err + s.abs() * p_err + u * (p * s).abs()
    bound = m_err + u * want.abs()
    assert ((got.double() - want).abs() <= bound).all()


def test_refusals() -> None:
    x = torch.randn(4, 6)
    with pytest.raises(torch_neuronx.UnsupportedOperatorError,
                       match=r"aten::sum is not supported on the neuron device: a reduction "
                             r"to a 0-dimensional tensor"):
        torch_neuronx.trace(lambda t: t.sum(), x)
    with pytest.raises(torch_neuronx.UnsupportedOperatorError,
                       match=r"aten::sum is not supported on the neuron device: "
                             r"dtype=torch.bfloat16 for a torch.float32 input"):
        torch_neuronx.trace(lambda t: t.sum(0, dtype=torch.bfloat16), x)
