# SPDX-License-Identifier: MIT
"""Reductions (sum, mean, amax, amin over any dims, var as mean, sub, mul
and sum) and the backward kernels of softmax and log_softmax: the IR's
reductions and its softmax_backward and log_softmax_backward."""

from __future__ import annotations

import math
from typing import Any, Callable, List, Optional, Sequence, Tuple

import torch

from ..context import Context
from ..registry import CAST_DTYPES, lowering
from ..values import Tensor, Weight
from .movement import permuted
from .pointwise import Pointwise

aten = torch.ops.aten


def _dims(L: Context, x: Tensor, dim: Any) -> List[int]:
    """The reduced axes as the IR takes them: every axis for None or []."""
    if dim is None:
        return []
    dims = [dim] if isinstance(dim, int) else list(dim)
    rank = len(x.shape)
    for d in dims:
        if not -rank <= d < rank:
            raise L.unsupported(f"dim {d} out of range for rank {rank}")
    return [d % rank for d in dims]


def _check_dtype(L: Context, dtype: Optional[torch.dtype], x: Tensor) -> None:
    if dtype is not None and dtype != x.dtype:
        raise L.unsupported(f"dtype={dtype} for a {x.dtype} input (the device does not convert "
                            "dtypes)")


def _reduce(L: Context, op: str, x: Tensor, dims: Sequence[int], keepdim: bool,
            shape: Optional[Sequence[int]] = None, result: bool = True) -> Tensor:
    """@p op of @p x over @p dims; with @p result, the node's result (of
    its dtype)."""
    want = tuple(L.out_shape() if shape is None else shape)
    if not want and not L.scalar_results:
        raise L.unsupported("a reduction to a 0-dimensional tensor (the IR's values have "
                            "rank >= 1)")
    return L.emit(op, [x], shape=want or (1,), flags=["keepdim"] if keepdim else [],
                  dims=list(dims), result=result)


@lowering(aten.sum.dim_IntList, aten.sum.default, aten.mean.dim, aten.mean.default)
def sum_mean(L: Context, node: torch.fx.Node) -> None:
    # sum.dim_IntList(self, dim, keepdim=False, *, dtype=None); sum.default(self, *, dtype);
    # mean's the same
    x = L.tensor(L.arg(0), "self")
    _check_dtype(L, L.arg(None, "dtype"), x)
    whole = node.target in (aten.sum.default, aten.mean.default)
    dim = None if whole else L.arg(1, "dim")
    op = "sum" if node.target in (aten.sum.dim_IntList, aten.sum.default) else "mean"
    L.bind(_reduce(L, op, x, _dims(L, x, dim), bool(L.arg(2, "keepdim", False))))


def _nan_kept(L: Context, x: Tensor, r: Tensor, dims: List[int], keepdim: bool) -> Tensor:
    """@p r, the largest or smallest x over @p dims, NaN where one of those
    x is (the device's REDUCE max and min pass over a NaN; torch's amax
    and amin return it)."""
    nan = L.emit("ne", [x, x], result=False, shape=x.shape, dtype=torch.bool)
    any_nan = _reduce(L, "amax", _cast(L, nan, torch.float32), dims, keepdim, shape=r.shape,
                      result=False)
    none = L.emit("eq", [any_nan, 0.0], result=False, shape=r.shape, dtype=torch.bool)
    return L.emit("where", [none, r, math.nan], shape=r.shape, dtype=x.dtype)


@lowering(aten.amax.default, aten.amin.default)
def amax_amin(L: Context, node: torch.fx.Node) -> None:
    # amax(self, dim=[], keepdim=False): [] reduces every axis
    x = L.tensor(L.arg(0), "self")
    op = "amax" if node.target == aten.amax.default else "amin"
    dims, keepdim = _dims(L, x, L.arg(1, "dim", [])), bool(L.arg(2, "keepdim", False))
    L.bind(_nan_kept(L, x, _reduce(L, op, x, dims, keepdim), dims, keepdim))


def _variance(L: Context, x: Tensor, dims: List[int], correction: Any, keepdim: bool
              ) -> Tuple[Tensor, Tensor]:
    """var(x, dims, correction) as sum((x - mean)^2) / (N - correction),
    and the mean (kept axes of 1)."""
    correction = 1 if correction is None else correction
    n = 1
    for d in dims or range(len(x.shape)):
        n *= x.shape[d]
    if n - correction <= 0:
        raise L.unsupported(f"{n} elements with correction {correction} (a division by "
                            f"{n - correction})")
    kept = [1 if (not dims or d in dims) else s for d, s in enumerate(x.shape)]
    m = _reduce(L, "mean", x, dims, True, shape=kept)
    centred = L.emit("sub", [x, m], shape=x.shape)
    squares = L.emit("mul", [centred, centred], shape=x.shape)
    shape = _reduced_shape(x, dims, keepdim)
    s = _reduce(L, "sum", squares, dims, keepdim, shape=shape)
    return L.emit("div", [s, float(n - correction)], result=False, shape=s.shape), m


def _reduced_shape(x: Tensor, dims: Sequence[int], keepdim: bool) -> Tuple[int, ...]:
    every = not dims
    if keepdim:
        return tuple(1 if every or d in dims else s for d, s in enumerate(x.shape))
    return tuple(s for d, s in enumerate(x.shape) if not every and d not in dims)


@lowering(aten.var.correction, aten.std.correction, aten.var_mean.correction,
          aten.std_mean.correction)
def var(L: Context, node: torch.fx.Node) -> None:
    # var(self, dim=None, *, correction=None, keepdim=False): the mean of
    # squared deviations (std: its square root; var_mean and std_mean:
    # with the mean)
    x = L.tensor(L.arg(0), "self")
    dims = _dims(L, x, L.arg(1, "dim"))
    keepdim = bool(L.arg(None, "keepdim", False))
    v, m = _variance(L, x, dims, L.arg(None, "correction"), keepdim)
    if node.target in (aten.std.correction, aten.std_mean.correction):
        v = L.emit("sqrt", [v], result=False, shape=v.shape)
    if node.target in (aten.var.correction, aten.std.correction):
        L.bind(v)
        return
    shape = _reduced_shape(x, dims, keepdim) or ((1,) if L.scalar_results else ())
    if m.shape != shape:
        m = L.emit("reshape", [m], result=False, shape=shape, dims=list(shape))
    L.bind([v, m])


@lowering(aten.nansum.default)
def nansum(L: Context, node: torch.fx.Node) -> None:
    # nansum(self, dim=None, keepdim=False, *, dtype=None): the sum of x
    # where it is not NaN
    x = L.tensor(L.arg(0), "self")
    _check_dtype(L, L.arg(None, "dtype"), x)
    number = L.emit("eq", [x, x], result=False, shape=x.shape, dtype=torch.bool)
    kept = L.emit("where", [number, x, 0.0], result=False, shape=x.shape, dtype=x.dtype)
    L.bind(_reduce(L, "sum", kept, _dims(L, x, L.arg(1, "dim")), bool(L.arg(2, "keepdim", False))))


@lowering(aten.logsumexp.default)
def logsumexp(L: Context, node: torch.fx.Node) -> None:
    # logsumexp(self, dim, keepdim=False): m + ln(sum(e^(x - m))), m the
    # largest value (0 where it is infinite, as torch), in float32
    given = L.tensor(L.arg(0), "self")
    x = _in_float(L, given)
    dims = _dims(L, x, L.arg(1, "dim"))
    keepdim = bool(L.arg(2, "keepdim", False))
    kept = _reduced_shape(x, dims, True)
    m = _reduce(L, "amax", x, dims, True, shape=kept, result=False)
    finite = L.emit("ne", [L.emit("abs", [m], result=False, shape=kept), math.inf],
                    result=False, shape=kept, dtype=torch.bool)
    m = L.emit("where", [finite, m, 0.0], result=False, shape=kept, dtype=torch.float32)
    e = L.emit("exp", [L.emit("sub", [x, m], result=False, shape=x.shape)], result=False,
               shape=x.shape)
    out = L.out_shape() or ((1,) if L.scalar_results else ())
    s = _reduce(L, "sum", e, dims, True, shape=kept, result=False)
    r = L.emit("add", [L.emit("log", [s], result=False, shape=kept), m], result=False,
               shape=kept)
    if tuple(out) != kept:
        r = L.emit("reshape", [r], result=False, shape=out, dims=list(out))
    L.bind(_cast(L, r, given.dtype))


def _in_float(L: Context, x: Tensor) -> Tensor:
    return _cast(L, x, torch.float32)


def _cast(L: Context, x: Tensor, dtype: torch.dtype) -> Tensor:
    if x.dtype == dtype:
        return x
    return L.emit("cast", [x], result=False, shape=x.shape, dtype=dtype,
                  flags=[f"dtype={CAST_DTYPES[dtype]}"])


@lowering(aten.aminmax.default)
def aminmax(L: Context, node: torch.fx.Node) -> None:
    # aminmax(self, *, dim=None, keepdim=False) -> (min, max)
    x = L.tensor(L.arg(0), "self")
    dim = L.arg(None, "dim")
    dims = _dims(L, x, dim)
    keepdim = bool(L.arg(None, "keepdim", False))
    shape = tuple(L.value(node)[0].shape)
    L.bind([_reduce(L, op, x, dims, keepdim, shape=shape) for op in ("amin", "amax")])


@lowering(aten.all.default, aten.all.dim, aten.all.dims, aten.any.default, aten.any.dim,
          aten.any.dims)
def all_any(L: Context, node: torch.fx.Node) -> None:
    # whether every (any) x != 0: the smallest (largest) of those tests as
    # 0 and 1, != 0 (bool results)
    x = L.tensor(L.arg(0), "self")
    whole = node.target in (aten.all.default, aten.any.default)
    dims = [] if whole else _dims(L, x, L.arg(1, "dim"))
    keepdim = False if whole else bool(L.arg(2, "keepdim", False))
    if x.dtype == torch.bool:
        ones = _cast(L, x, torch.float32)  # the mask's own 0 and 1
    else:
        nonzero = L.emit("ne", [x, 0.0], result=False, shape=x.shape, dtype=torch.bool)
        ones = _cast(L, nonzero, torch.float32)
    op = "amin" if node.target in (aten.all.default, aten.all.dim, aten.all.dims) else "amax"
    shape = _reduced_shape(x, dims, keepdim) or ((1,) if L.scalar_results else ())
    r = _reduce(L, op, ones, dims, keepdim, shape=shape, result=False)
    L.bind(L.emit("ne", [r, 0.0], dtype=torch.bool, shape=shape))


def _loss(L: Context, node: torch.fx.Node, reduction: Any,
          per_element: Callable[[Pointwise, Tensor, Tensor], Tensor]) -> None:
    """A loss of self and target: @p per_element of their float32 values,
    then none (0), mean (1) or sum (2) of it."""
    a, b = L.tensor(L.arg(0), "self"), L.tensor(L.arg(1), "target")
    shape = tuple(torch.broadcast_shapes(a.shape, b.shape))
    P = Pointwise(L, shape)
    r = per_element(P, P.input(a, "self"), P.input(b, "target"))
    reduction = int(reduction)
    if reduction == 1 or reduction == 2:
        r = _reduce(L, "mean" if reduction == 1 else "sum", r, [], False, result=False)
    elif reduction != 0:
        raise L.unsupported(f"reduction {reduction}")
    L.bind(_cast(L, r, L.value(node).dtype))


@lowering(aten.mse_loss.default)
def mse_loss(L: Context, node: torch.fx.Node) -> None:
    # (x - y)^2
    def f(P: Pointwise, x: Tensor, y: Tensor) -> Tensor:
        d = P("sub", x, y)
        return P("mul", d, d)
    _loss(L, node, L.arg(2, "reduction", 1), f)


@lowering(aten.huber_loss.default, aten.smooth_l1_loss.default)
def huber_loss(L: Context, node: torch.fx.Node) -> None:
    # z = |x - y|; huber: z < delta ? z^2 / 2 : delta (z - delta / 2);
    # smooth_l1: z < beta ? z^2 / 2 / beta : z - beta / 2
    huber = node.target == aten.huber_loss.default
    k = float(L.arg(3, "delta" if huber else "beta", 1.0))

    def f(P: Pointwise, x: Tensor, y: Tensor) -> Tensor:
        z = P("abs", P("sub", x, y))
        if not huber and k == 0:
            return z
        square = P("mul", P("mul", z, 0.5), z)
        if huber:
            linear = P("mul", P("sub", z, 0.5 * k), k)
        else:
            square = P("div", square, k)
            linear = P("sub", z, 0.5 * k)
        return P.keep_nan(z, P.where(P.mask("lt", z, k), square, linear))
    _loss(L, node, L.arg(2, "reduction", 1), f)


@lowering(aten.soft_margin_loss.default)
def soft_margin_loss(L: Context, node: torch.fx.Node) -> None:
    # log1p(exp(-y x))
    _loss(L, node, L.arg(2, "reduction", 1),
          lambda P, x, y: P.log1p(P("exp", P("mul", P("mul", x, y), -1.0))))


@lowering(aten.trace.default)
def trace(L: Context, node: torch.fx.Node) -> None:
    # the sum of the diagonal: x where a constant identity mask keeps it
    x = L.tensor(L.arg(0), "self")
    if len(x.shape) != 2:
        raise L.unsupported(f"trace of a rank-{len(x.shape)} tensor")
    eye = torch.eye(x.shape[0], x.shape[1], dtype=x.dtype)
    mask = L.tensor(Weight(eye, node.name + "_diagonal"), "diagonal")
    kept = L.emit("where", [mask, x, 0.0], result=False, shape=x.shape, dtype=x.dtype)
    L.bind(_reduce(L, "sum", kept, [], False))


def _softmax_backward(L: Context, op: str) -> None:
    # (grad_output, output, dim, input_dtype); over another axis than the
    # last, between permutations that make it the last and back
    grad, out = L.tensor(L.arg(0), "grad_output"), L.tensor(L.arg(1), "output")
    dim, input_dtype = L.arg(2), L.arg(3)
    if input_dtype != grad.dtype:
        raise L.unsupported(f"input_dtype={input_dtype} for a {grad.dtype} gradient (the device "
                            "does not convert dtypes)")
    # in float32, rounded once (torch's CPU kernel accumulates in float)
    dtype = grad.dtype
    grad, out = _in_float(L, grad), _in_float(L, out)
    rank = len(out.shape)
    dim = dim + rank if dim < 0 else dim
    if dim == rank - 1:
        r = L.emit(op, [grad, out], axis=-1, result=False, shape=out.shape)
    else:
        perm = [d for d in range(rank) if d != dim] + [dim]
        moved = [permuted(L, t, perm) for t in (grad, out)]
        r = L.emit(op, moved, axis=-1, result=False, shape=moved[0].shape)
        r = permuted(L, r, [perm.index(d) for d in range(rank)])
    L.bind(_cast(L, r, dtype))


@lowering(aten._softmax_backward_data.default)
def softmax_backward(L: Context, node: torch.fx.Node) -> None:
    _softmax_backward(L, "softmax_backward")


@lowering(aten._log_softmax_backward_data.default)
def log_softmax_backward(L: Context, node: torch.fx.Node) -> None:
    _softmax_backward(L, "log_softmax_backward")


@lowering(aten.max.default, aten.min.default)
def max_min(L: Context, node: torch.fx.Node) -> None:
    # the largest (smallest) element; NaN if any is, as torch
    x = L.tensor(L.arg(0), "self")
    op = "amax" if node.target == aten.max.default else "amin"
    L.bind(_nan_kept(L, x, _reduce(L, op, x, [], False), [], False))


def _p_norm(L: Context, x: Tensor, p: float, dims: List[int], keepdim: bool,
            shape: Tuple[int, ...]) -> Tensor:
    """The p-norm of float32 @p x over @p dims: (sum |x|^p)^(1/p); the
    largest (smallest) |x| for p = inf (-inf); the count of nonzero x for
    p = 0."""
    def ew(op: str, *operands: Any, dtype: torch.dtype = torch.float32) -> Tensor:
        t = next(o for o in operands if isinstance(o, Tensor))
        return L.emit(op, list(operands), result=False, shape=t.shape, dtype=dtype)
    a = ew("abs", x)
    if math.isinf(p):
        return _reduce(L, "amax" if p > 0 else "amin", a, dims, keepdim, shape=shape,
                       result=False)
    if p == 0:
        return _reduce(L, "sum", _cast(L, ew("ne", x, 0.0, dtype=torch.bool), torch.float32),
                       dims, keepdim, shape=shape, result=False)
    if p == 1:
        return _reduce(L, "sum", a, dims, keepdim, shape=shape, result=False)
    if p == 2:
        s = _reduce(L, "sum", ew("mul", x, x), dims, keepdim, shape=shape, result=False)
        return ew("sqrt", s)
    powered = ew("exp", ew("mul", ew("log", a), p))
    s = _reduce(L, "sum", powered, dims, keepdim, shape=shape, result=False)
    return ew("exp", ew("div", ew("log", s), p))


@lowering(aten.linalg_vector_norm.default, aten.norm.ScalarOpt_dim, aten.norm.Scalar,
          aten.dist.default)
def vector_norm(L: Context, node: torch.fx.Node) -> None:
    # linalg_vector_norm(self, ord=2, dim=None, keepdim=False, *, dtype=None);
    # norm(self, p=2, dim, keepdim=False); dist(self, other, p=2): the norm
    # of self - other. In float32, rounded once.
    x = L.tensor(L.arg(0), "self")
    dtype = L.value(node).dtype
    if node.target == aten.dist.default:
        y = L.tensor(L.arg(1), "other")
        shape = tuple(torch.broadcast_shapes(x.shape, y.shape))
        P = Pointwise(L, shape)
        v = P("sub", P.input(x, "self"), P.input(y, "other"))
        p, dims, keepdim = L.arg(2, "p", 2), [], False
    else:
        if node.target == aten.linalg_vector_norm.default:
            _check_dtype(L, L.arg(None, "dtype"), x)
            p, dim, keepdim = L.arg(1, "ord", 2), L.arg(2, "dim"), L.arg(3, "keepdim", False)
        elif node.target == aten.norm.ScalarOpt_dim:
            p, dim, keepdim = L.arg(1, "p"), L.arg(2, "dim"), L.arg(3, "keepdim", False)
        else:
            p, dim, keepdim = L.arg(1, "p", 2), None, False
        v = _in_float(L, x)
        dims = _dims(L, x, dim)
    p = 2.0 if p is None else float(p)
    shape = tuple(L.out_shape()) or ((1,) if L.scalar_results else ())
    if not shape:
        raise L.unsupported("a reduction to a 0-dimensional tensor (the IR's values have "
                            "rank >= 1)")
    L.bind(_cast(L, _p_norm(L, v, p, dims, bool(keepdim), shape), dtype))


def _at_least(P: Pointwise, v: Tensor, floor: float) -> Tensor:
    # max(v, floor) with NaN kept (std::max of a NaN first operand)
    return P.keep_nan(v, P("maximum", v, floor))


@lowering(aten.binary_cross_entropy.default)
def binary_cross_entropy(L: Context, node: torch.fx.Node) -> None:
    # (self, target, weight=None, reduction=mean):
    # (t - 1) max(log1p(-x), -100) - t max(ln x, -100), times the weight
    weight = L.arg(2, "weight")

    def f(P: Pointwise, x: Tensor, t: Tensor) -> Tensor:
        a = P("mul", P("sub", t, 1.0), _at_least(P, P.log1p(P("mul", x, -1.0)), -100.0))
        r = P("sub", a, P("mul", t, _at_least(P, P("log", x), -100.0)))
        return r if weight is None else P("mul", r, P.input(weight, "weight"))
    _loss(L, node, L.arg(3, "reduction", 1), f)


@lowering(aten.binary_cross_entropy_with_logits.default)
def binary_cross_entropy_with_logits(L: Context, node: torch.fx.Node) -> None:
    # (self, target, weight=None, pos_weight=None, reduction=mean):
    # (1 - t) x - lw log_sigmoid(x), lw = (pos_weight - 1) t + 1 (1 without
    # pos_weight), log_sigmoid(x) = min(x, 0) - log1p(e^-|x|); times the weight
    weight, pos_weight = L.arg(2, "weight"), L.arg(3, "pos_weight")

    dtype = L.value(node).dtype

    def f(P: Pointwise, x: Tensor, t: Tensor) -> Tensor:
        def r(v: Tensor) -> Tensor:  # torch computes each step in the dtype
            return P.rounded(v, dtype)
        tail = P.log1p(P("exp", P("mul", P("abs", x), -1.0)))
        log_sigmoid = r(P("sub", P.keep_nan(x, P("minimum", x, 0.0)), tail))
        if pos_weight is not None:
            pw = P.input(pos_weight, "pos_weight")
            lw = r(P("add", r(P("mul", r(P("sub", pw, 1.0)), t)), 1.0))
            log_sigmoid = r(P("mul", log_sigmoid, lw))
        loss = r(P("sub", r(P("mul", r(P("sub", 1.0, t)), x)), log_sigmoid))
        return loss if weight is None else r(P("mul", loss, P.input(weight, "weight")))
    _loss(L, node, L.arg(4, "reduction", 1), f)
