"""Indexing ops: Gather(Elements/ND), Scatter(Elements/ND), Where, OneHot, NonZero, Compress,
ReverseSequence, Unique, TensorScatter."""

from __future__ import annotations

import math
from typing import Any

import burn
import numpy as np

from .._graph import Node
from .._registry import attr_in, op
from ._common import axis, index_tensor

_REDUCTIONS = ("none", "add", "mul", "max", "min")


def _wrap_negative(idx: burn.Tensor, size: int | burn.Tensor) -> burn.Tensor:
    """Negative indices count from the end (ONNX allows them everywhere an index is taken)."""
    if idx.device.backend.name == "ndarray" and not idx.backend.is_autodiff:
        arr = idx.numpy()
        if not (arr < 0).any():
            return idx
    return idx + (idx < 0).cast(idx.dtype) * size


@op("Gather")
def gather(ctx: Any, node: Node, data: burn.Tensor, indices: burn.Tensor) -> burn.Tensor:
    a = axis(int(node.attrs.get("axis", 0)), data.ndim, node)
    n = data.shape[a]
    idx = _wrap_negative(indices, n)
    picked = data.select(a, idx.reshape(-1))
    shape = list(data.shape[:a]) + list(indices.shape) + list(data.shape[a + 1 :])
    return picked.reshape(*shape) if shape else picked.reshape(())


@op("GatherElements")
def gather_elements(ctx: Any, node: Node, data: burn.Tensor, indices: burn.Tensor) -> burn.Tensor:
    a = axis(int(node.attrs.get("axis", 0)), data.ndim, node)
    return data.gather(a, _wrap_negative(indices, data.shape[a]))


def _linear_nd(data_shape: tuple[int, ...], indices: burn.Tensor, batch_dims: int) -> tuple[burn.Tensor, int]:
    """Row numbers into data viewed as (prod(batch) * prod(indexed), *rest), and the indexed depth k."""
    k = indices.shape[-1]
    indexed = data_shape[batch_dims : batch_dims + k]
    strides = [math.prod(indexed[j + 1 :]) for j in range(k)]
    dims = index_tensor(list(indexed), indices.device).cast(indices.dtype)
    idx = indices + (indices < 0).cast(indices.dtype) * dims
    lin = (idx * index_tensor(strides, indices.device).cast(indices.dtype)).sum(-1)
    if batch_dims:
        nb = math.prod(data_shape[:batch_dims])
        batch = burn.arange(0, nb, device=indices.device).cast(indices.dtype)
        batch = batch.reshape(*data_shape[:batch_dims], *([1] * (lin.ndim - batch_dims)))
        lin = lin + batch * math.prod(indexed)
    return lin, k


@op("GatherND")
def gather_nd(ctx: Any, node: Node, data: burn.Tensor, indices: burn.Tensor) -> burn.Tensor:
    b = int(node.attrs.get("batch_dims", 0))
    lin, k = _linear_nd(tuple(data.shape), indices, b)
    rest = list(data.shape[b + k :])
    flat = data.reshape(math.prod(data.shape[: b + k]), *rest)
    out = flat.select(0, lin.reshape(-1))
    return out.reshape(*indices.shape[:-1], *rest)


def _scatter_host(
    ctx: Any, data: burn.Tensor, where: tuple[np.ndarray, ...], upd: np.ndarray, how: str
) -> burn.Tensor:
    """mul/max/min scatter reductions on the host (numpy's ufunc.at; a device sync)."""
    arr = data.numpy().copy()
    {"mul": np.multiply, "max": np.maximum, "min": np.minimum, "add": np.add}[how].at(arr, where, upd)
    return burn.from_numpy(arr, device=data.device, dtype=data.dtype)


@op("ScatterElements", "Scatter", check=attr_in("reduction", _REDUCTIONS, "none"))
def scatter_elements(
    ctx: Any, node: Node, data: burn.Tensor, indices: burn.Tensor, updates: burn.Tensor
) -> burn.Tensor:
    a = axis(int(node.attrs.get("axis", 0)), data.ndim, node)
    how = node.attrs.get("reduction", "none")
    idx = _wrap_negative(indices, data.shape[a])
    updates = updates.cast(data.dtype)
    if how in ("mul", "max", "min"):
        grid = list(np.indices(tuple(idx.shape), sparse=True))
        grid[a] = idx.numpy()
        return _scatter_host(ctx, data, tuple(grid), updates.numpy(), how)
    if how == "add":
        return data.scatter_add(a, idx, updates)
    return _assign(data, a, idx, updates)


def _assign(data: burn.Tensor, a: int, idx: burn.Tensor, updates: burn.Tensor) -> burn.Tensor:
    """``data`` with ``updates`` written at ``idx`` along ``a`` (ScatterElements without reduction)."""
    hit = burn.zeros_like(data, dtype=_count_dtype(data)).scatter_add(
        a, idx, burn.ones_like(idx).cast(_count_dtype(data))
    )
    values = burn.zeros_like(data).scatter_add(a, idx, updates)
    return burn.where(hit > 0, values, data)


def _count_dtype(t: burn.Tensor) -> burn.DType:
    return t.device.backend.default_float


@op("ScatterND", check=attr_in("reduction", _REDUCTIONS, "none"))
def scatter_nd(
    ctx: Any, node: Node, data: burn.Tensor, indices: burn.Tensor, updates: burn.Tensor
) -> burn.Tensor:
    how = node.attrs.get("reduction", "none")
    lin, k = _linear_nd(tuple(data.shape), indices, 0)
    rest = list(data.shape[k:])
    flat = data.reshape(math.prod(data.shape[:k]), *rest)
    rows = lin.reshape(-1)
    upd = updates.cast(data.dtype).reshape(rows.shape[0], *rest)
    if how in ("mul", "max", "min"):
        out = _scatter_host(ctx, flat, (rows.numpy(),), upd.numpy(), how)
    elif how == "add":
        out = flat.select_add(0, rows, upd)
    else:
        ones = burn.ones((rows.shape[0], *rest), dtype=_count_dtype(data), device=data.device)
        hit = burn.zeros_like(flat, dtype=_count_dtype(data)).select_add(0, rows, ones)
        out = burn.where(hit > 0, burn.zeros_like(flat).select_add(0, rows, upd), flat)
    return out.reshape(*data.shape)


@op("Where")
def where(ctx: Any, node: Node, cond: burn.Tensor, a: burn.Tensor, b: burn.Tensor) -> burn.Tensor:
    return burn.where(cond if cond.dtype.is_bool else cond.bool(), a, b)


@op("OneHot", host=(1, 2))
def one_hot(ctx: Any, node: Node, indices: burn.Tensor, depth: Any, values: Any) -> burn.Tensor:
    d = int(ctx.scalar(depth))
    vals = ctx.array(values).reshape(-1)
    rank = indices.ndim + 1
    a = axis(int(node.attrs.get("axis", -1)), rank, node)
    idx = indices if not indices.dtype.is_float else indices.cast(burn.int32)
    idx = idx + (idx < 0).cast(idx.dtype) * d
    view = [1] * rank
    view[a] = d
    positions = burn.arange(0, d, device=idx.device).cast(idx.dtype).reshape(*view)
    hot = idx.unsqueeze(a) == positions
    dt = ctx.fit(burn.dtype(vals.dtype.name)) if vals.dtype.kind != "b" else burn.bool_
    on = burn.full((), vals[1].item(), dtype=dt, device=idx.device)
    off = burn.full((), vals[0].item(), dtype=dt, device=idx.device)
    return burn.where(hot, on, off)


@op("NonZero", dynamic=True)
def non_zero(ctx: Any, node: Node, x: burn.Tensor) -> burn.Tensor:
    arr = ctx.array(x)
    found = np.array(np.nonzero(arr.reshape(1) if arr.ndim == 0 else arr), dtype=np.int64)
    return ctx.tensor(found)


@op("Compress", host=(1,), dynamic=True)
def compress(ctx: Any, node: Node, x: burn.Tensor, cond: Any) -> burn.Tensor:
    keep = np.nonzero(ctx.array(cond).reshape(-1))[0]
    if "axis" not in node.attrs:
        x = x.reshape(-1)
        a = 0
    else:
        a = axis(int(node.attrs["axis"]), x.ndim, node)
    keep = keep[keep < x.shape[a]]
    return x.select(a, index_tensor(keep, x.device)) if len(keep) else x.narrow(a, 0, 0)


@op("ReverseSequence", since=10, host=(1,))
def reverse_sequence(ctx: Any, node: Node, x: burn.Tensor, lens: Any) -> burn.Tensor:
    """The first ``lens[b]`` steps of each batch entry reversed along the time axis, one gather."""
    t = axis(int(node.attrs.get("time_axis", 0)), x.ndim, node)
    b = axis(int(node.attrs.get("batch_axis", 1)), x.ndim, node)
    n = np.asarray(ctx.ints(lens)).reshape(-1)
    steps = np.arange(x.shape[t])
    view = [1] * x.ndim
    view[t], view[b] = x.shape[t], x.shape[b]
    grid = steps[:, None] if t < b else steps[None, :]
    count = n[None, :] if t < b else n[:, None]
    idx = np.where(grid < count, count - 1 - grid, grid).reshape(view)
    return x.gather(t, index_tensor(np.broadcast_to(idx, x.shape).copy(), x.device).reshape(*x.shape))


@op("Unique", since=11, dynamic=True)
def unique(ctx: Any, node: Node, x: burn.Tensor) -> tuple[burn.Tensor, ...]:
    """On the host (numpy): the unique values or slices along ``axis``, sorted or in order of first
    appearance, with first indices, inverse indices and counts (int64)."""
    arr = x.numpy()
    a = node.attrs.get("axis")
    if a is None:
        arr, a = arr.reshape(-1), 0
    else:
        a = axis(int(a), arr.ndim, node)
    values, first, inverse, counts = np.unique(
        arr, return_index=True, return_inverse=True, return_counts=True, axis=a
    )
    inverse = inverse.reshape(-1)
    if not node.attrs.get("sorted", 1):
        order = np.argsort(first, kind="stable")
        values, first, counts = np.take(values, order, axis=a), first[order], counts[order]
        inverse = np.argsort(order)[inverse]
    i64 = ctx.fit(burn.int64)
    return (
        ctx.tensor(values, x.dtype),
        ctx.tensor(first, i64),
        ctx.tensor(inverse, i64),
        ctx.tensor(counts, i64),
    )


@op("TensorScatter", since=24, host=(2,), check=attr_in("mode", ("linear", "circular"), "linear"))
def tensor_scatter(ctx: Any, node: Node, past: burn.Tensor, update: burn.Tensor, write: Any = None) -> Any:
    """A KV-cache write: batch entry ``b``'s ``update`` lands at positions ``write[b]`` onwards along
    ``axis`` (modulo the cache length in circular mode); the rest of ``past`` is kept."""
    a = axis(int(node.attrs.get("axis", -2)), past.ndim, node)
    size = past.shape[a]
    start = np.zeros(past.shape[0], np.int64) if write is None else np.asarray(ctx.ints(write))
    steps = np.arange(update.shape[a])
    view = [1] * past.ndim
    view[0], view[a] = past.shape[0], update.shape[a]
    pos = (start[:, None] + steps[None, :]) if a != 0 else start[:, None] * 0 + steps[None, :]
    if node.attrs.get("mode", "linear") == "circular":
        pos = pos % size
    idx = np.broadcast_to(pos.reshape(view), update.shape).copy()
    return _assign(past, a, index_tensor(idx, past.device).reshape(*update.shape), update.cast(past.dtype))
