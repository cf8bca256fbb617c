"""Helpers the converters share: axes, attribute-or-input arguments, dtype plumbing."""

from __future__ import annotations

from typing import Any

import burn
import numpy as np

from .._graph import Node


def axis(a: int, rank: int, node: Node, what: str = "axis") -> int:
    """A non-negative axis; a clear error for one out of range."""
    if not -max(rank, 1) <= a < max(rank, 1):
        raise ValueError(f"{node.op_type}: {what} {a} is out of range for rank {rank}")
    return a + rank if a < 0 else a


def axes_arg(ctx: Any, node: Node, value: Any, rank: int, attr: str = "axes") -> list[int] | None:
    """Axes given as an input (newer opsets) or an attribute (older ones); None when absent."""
    if value is not None:
        got = ctx.ints(value)
    elif attr in node.attrs:
        got = list(node.attrs[attr])
    else:
        return None
    return [axis(a, rank, node, "axes") for a in got]


def as_float(x: burn.Tensor) -> burn.Tensor:
    return x if x.dtype.is_float else x.float()


def same_dtype(y: burn.Tensor, like: burn.Tensor) -> burn.Tensor:
    return y if y.dtype is like.dtype else y.cast(like.dtype)


def full(ctx: Any, shape: tuple[int, ...], value: Any, dtype: burn.DType) -> burn.Tensor:
    return burn.full(tuple(shape), value, dtype=ctx.fit(dtype), device=ctx.device)


def np_dtype(t: burn.Tensor) -> Any:
    return np.dtype(t.dtype.name) if t.dtype.name != "bfloat16" else np.float32


def unidirectional(x: burn.Tensor, rank: int) -> burn.Tensor:
    """``x`` with leading unit dims up to ``rank`` (ONNX's unidirectional broadcast, numpy-aligned)."""
    while x.ndim < rank:
        x = x.unsqueeze(0)
    return x


def index_tensor(values: Any, device: burn.Device) -> burn.Tensor:
    """Host index values as an int tensor of the device's default int (int32 on wgpu: no warning)."""
    arr = np.asarray(values, dtype=np.int64).reshape(-1) if not isinstance(values, np.ndarray) else values
    return burn.from_numpy(np.asarray(arr, order="C"), device=device, dtype=device.backend.default_int)
