"""BitCast: a tensor's bits read as another element type of the same width.

No backend has a bit-reinterpreting op, so the bits are read on the host (free for host values, one
copy from the device otherwise) and the result placed back on the node's device."""

from __future__ import annotations

from typing import Any

import burn
import numpy as np
from onnx.helper import tensor_dtype_to_np_dtype

from .._graph import Node
from .._registry import op


def _bitcast_check(node: Node) -> str | None:
    to = node.attrs.get("to")
    if to is None:
        return "required attribute 'to' missing"
    try:
        np.dtype(tensor_dtype_to_np_dtype(int(to)))
    except (KeyError, TypeError, ValueError):
        return f"to={to} has no numpy dtype"
    if int(to) in (8, 14, 15) or int(to) >= 17:
        return f"to={to}: BitCast to this element type is not supported"
    return None


@op("BitCast", since=26, check=_bitcast_check)
def bitcast(ctx: Any, node: Node, x: burn.Tensor) -> burn.Tensor:
    to = int(node.attrs["to"])
    target = np.dtype(tensor_dtype_to_np_dtype(to))
    arr = np.array(ctx.array(x), order="C")  # (ascontiguousarray would make a 0-d array 1-d)
    if arr.dtype.itemsize != target.itemsize:
        # a narrow unsigned type burn holds widened (uint16 as int32): its low bits are the value's
        if arr.dtype.kind not in "iub" or arr.dtype.itemsize < target.itemsize:
            raise ValueError(
                f"BitCast: a {arr.dtype} tensor (as this backend holds it) has no {target.itemsize}-byte "
                f"bit pattern to read as {target}"
            )
        bits = arr.astype(np.int64) & ((1 << (8 * target.itemsize)) - 1)
        arr = bits.astype(f"u{target.itemsize}")
    out = arr.view(target)
    dtype = ctx.dtype(to)
    if ctx.fit(dtype) is not dtype:
        raise ValueError(f"BitCast: the backend {ctx.backend.name!r} has no {dtype.name} to hold the result")
    return ctx.tensor(out.astype(np.dtype(dtype.name), copy=False), dtype)
