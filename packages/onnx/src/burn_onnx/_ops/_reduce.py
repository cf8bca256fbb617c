"""Reductions: Reduce*, ArgMax/ArgMin, CumSum/CumProd, LpNormalization, Det, TopK."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import burn
import numpy as np
from burn.backend import reduced_shape

from .._graph import Node
from .._registry import op, requires
from ._common import as_float, axes_arg, axis, full, same_dtype

# opset from which each reduction takes its axes as an input instead of an attribute
_AXES_INPUT_SINCE = {"ReduceSum": 13}


def _l1(x: burn.Tensor, dims: tuple[int, ...], keep: bool) -> burn.Tensor:
    return x.abs().sum(dims, keep)


def _l2(x: burn.Tensor, dims: tuple[int, ...], keep: bool) -> burn.Tensor:
    return same_dtype((as_float(x) * as_float(x)).sum(dims, keep).sqrt(), x)


def _log_sum(x: burn.Tensor, dims: tuple[int, ...], keep: bool) -> burn.Tensor:
    return as_float(x).sum(dims, keep).log()


def _log_sum_exp(x: burn.Tensor, dims: tuple[int, ...], keep: bool) -> burn.Tensor:
    x = as_float(x)
    if x.numel() == 0:
        return x.exp().sum(dims, keep).log()
    m = x.max(dims, True)
    m = burn.where(m.isinf(), burn.zeros_like(m), m)  # all -inf rows stay -inf, not NaN
    out = (x - m).exp().sum(dims, True).log() + m
    return out if keep else out.squeeze(dims)


REDUCE: dict[str, Callable[[burn.Tensor, tuple[int, ...], bool], burn.Tensor]] = {
    "ReduceSum": lambda x, d, k: x.sum(d, k),
    "ReduceMean": lambda x, d, k: same_dtype(x.mean(d, k), x) if x.dtype.is_float else x.mean(d, k),
    "ReduceProd": lambda x, d, k: x.prod(d, k),
    "ReduceMax": lambda x, d, k: x.max(d, k),
    "ReduceMin": lambda x, d, k: x.min(d, k),
    "ReduceSumSquare": lambda x, d, k: (x * x).sum(d, k),
    "ReduceL1": _l1,
    "ReduceL2": _l2,
    "ReduceLogSum": _log_sum,
    "ReduceLogSumExp": _log_sum_exp,
}


def _extreme(dt: burn.DType, highest: bool) -> Any:
    """The identity of max (``highest=False``) or min over an empty set in dtype ``dt``."""
    if dt.is_bool:
        return highest
    if dt.is_float:
        return float("inf") if highest else float("-inf")
    info = np.iinfo(dt.name)
    return int(info.max if highest else info.min)


# reductions whose value over an empty set is their identity (the others reduce it themselves), and
# those that give bool for bool data (the others count it as integers)
_EMPTY: dict[str, Callable[[burn.DType], Any]] = {
    "ReduceMax": lambda dt: _extreme(dt, False),
    "ReduceMin": lambda dt: _extreme(dt, True),
}
_BOOL_OUT = frozenset({"ReduceMax", "ReduceMin"})


def _reduce(name: str, fn: Callable[[burn.Tensor, tuple[int, ...], bool], burn.Tensor]) -> Callable[..., Any]:
    since = _AXES_INPUT_SINCE.get(name, 18)

    def convert(ctx: Any, node: Node, x: burn.Tensor, axes: Any = None) -> burn.Tensor:
        keep = bool(node.attrs.get("keepdims", 1))
        dims = axes_arg(ctx, node, axes if node.opset >= since else None, x.ndim)
        if not dims:  # absent or empty: every axis, unless noop_with_empty_axes
            if node.attrs.get("noop_with_empty_axes", 0):
                return x
            dims = list(range(x.ndim))
        if x.ndim == 0:
            return fn(x.reshape(1), (0,), False)
        dims = sorted(set(dims))
        if name in _EMPTY and any(x.shape[d] == 0 for d in dims):
            shape = reduced_shape(x.shape, dims, bool(keep))
            return full(ctx, shape, _EMPTY[name](x.dtype), x.dtype)
        bool_in = x.dtype.is_bool
        if bool_in:
            x = x.cast(burn.int64 if burn.int64 in x.device.backend.dtypes else burn.int32)
        out = fn(x, tuple(dims), keep)
        return out.bool() if bool_in and name in _BOOL_OUT else out

    return convert


for _name, _fn in REDUCE.items():
    op(_name, host=(1,))(_reduce(_name, _fn))


def _arg(kind: str) -> Callable[..., Any]:
    def convert(ctx: Any, node: Node, x: burn.Tensor) -> burn.Tensor:
        a = axis(int(node.attrs.get("axis", 0)), x.ndim, node)
        keep = bool(node.attrs.get("keepdims", 1))
        if node.attrs.get("select_last_index", 0):
            n = x.shape[a]
            idx = getattr(x.flip([a]), kind)(a, keepdim=keep)
            out = (n - 1) - idx
        else:
            out = getattr(x, kind)(a, keepdim=keep)
        return out.cast(ctx.fit(burn.int64))

    return convert


op("ArgMax")(_arg("argmax"))
op("ArgMin")(_arg("argmin"))


def _cumulative(method: str, identity: float) -> Callable[..., Any]:
    """CumSum / CumProd: ``exclusive`` shifts the running values one step, starting from the identity."""

    def convert(ctx: Any, node: Node, x: burn.Tensor, ax: Any) -> burn.Tensor:
        a = axis(int(ctx.scalar(ax)), x.ndim, node)
        reverse, exclusive = node.attrs.get("reverse", 0), node.attrs.get("exclusive", 0)
        y = x.flip([a]) if reverse else x
        out = getattr(y, method)(a)
        if exclusive and x.shape[a]:
            first = full(ctx, reduced_shape(x.shape, (a,), True), identity, x.dtype)
            out = burn.cat([first.cast(out.dtype), out.narrow(a, 0, x.shape[a] - 1)], a)
        return out.flip([a]) if reverse else out

    return convert


op("CumSum", host=(1,))(_cumulative("cumsum", 0))
op("CumProd", host=(1,), since=26)(_cumulative("cumprod", 1))


@op("LpNormalization")
def lp_normalization(ctx: Any, node: Node, x: burn.Tensor) -> burn.Tensor:
    a = axis(int(node.attrs.get("axis", -1)), x.ndim, node)
    p = int(node.attrs.get("p", 2))
    norm = _l1(x, (a,), True) if p == 1 else _l2(x, (a,), True)
    return x / burn.where(norm == 0, burn.ones_like(norm), norm)  # an all-zero slice stays zero


@op("Det", since=11)
def det(ctx: Any, node: Node, x: burn.Tensor) -> burn.Tensor:
    """On the host (numpy's LU): the determinant of each trailing square matrix."""
    arr = x.numpy()
    return ctx.tensor(np.linalg.det(arr.astype(np.float64)).astype(arr.dtype), x.dtype)


@op("TopK", host=(1,), check=requires("k", before=10))
def topk(ctx: Any, node: Node, x: burn.Tensor, k_in: Any = None) -> tuple[burn.Tensor, burn.Tensor]:
    k = int(node.attrs["k"]) if node.opset < 10 else int(ctx.scalar(k_in))
    a = axis(int(node.attrs.get("axis", -1)), x.ndim, node)
    largest = bool(node.attrs.get("largest", 1))
    values, indices = x.sort_with_indices(a, descending=largest)
    return values.narrow(a, 0, k), indices.narrow(a, 0, k).cast(ctx.fit(burn.int64))
