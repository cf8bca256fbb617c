"""bfloat16 on the numpy backend: storage is ml_dtypes' numpy ``bfloat16`` (kind ``'V'``), arithmetic is
float32 rounded to bfloat16 once per op, as tensor cores do (float32 accumulation in matmul, conv and
reductions). ml_dtypes has bfloat16 ufunc loops too, but they promote Python floats to float32, run
matmul outside BLAS and reduce with bfloat16 running sums; one float32 detour per op avoids all three.

Shape ops (reshape, slice, cat, gather, sort, pad, ...) move bfloat16 values as they are.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import numpy as np

BF16_KIND = "V"  # ml_dtypes' dtypes are numpy kind 'V'; the backend holds no other 'V' dtype


def is_bf16(x: Any) -> bool:
    dt = getattr(x, "dtype", None)
    return dt is not None and dt.kind == BF16_KIND


def up(x: Any) -> Any:
    """A bfloat16 array as float32 (exact); anything else unchanged."""
    dt = getattr(x, "dtype", None)
    if dt is not None and dt.kind == BF16_KIND:
        return x.astype(np.float32)
    return x


def down(x: Any, bf16: np.dtype) -> Any:
    """A float32 result rounded to bfloat16 (round to nearest even); tuples element-wise; int and bool
    results unchanged."""
    if isinstance(x, tuple):
        return tuple(down(v, bf16) for v in x)
    dt = getattr(x, "dtype", None)
    if dt is not None and dt.kind == "f":
        return np.asarray(x.astype(bf16))
    return x


def via_float32(method: Callable[..., Any]) -> Callable[..., Any]:
    """A backend method that computes bfloat16 inputs in float32 and rounds its results to bfloat16."""

    @functools.wraps(method)
    def wrapper(self: Any, *args: Any, **kwargs: Any) -> Any:
        for a in args:
            dt = getattr(a, "dtype", None)
            if dt is not None and dt.kind == BF16_KIND:
                out = method(self, *map(up, args), **{k: up(v) for k, v in kwargs.items()})
                return down(out, dt)
        return method(self, *args, **kwargs)

    return wrapper


# backend methods whose arithmetic runs in float32 for bfloat16 inputs (beyond unary, binary, reduce
# and matmul, which test their operands inline: they are the per-op hot path)
# (where, clamp and max/min only select values: they run on bfloat16 as it is)
FLOAT32_METHODS = (
    "var",
    "scatter_add",
    "select_add",
    "cumsum",
    "cumprod",
    "softmax",
    "log_softmax",
    "conv",
    "conv_transpose",
    "unfold4d",
    "max_pool",
    "avg_pool",
    "adaptive_avg_pool",
    "adaptive_max_pool",
    "interpolate",
    "deform_conv2d",
    "roi_align",
    "quantize",
)


def compute_in_float32(cls: type) -> type:
    """Class decorator: wrap ``FLOAT32_METHODS`` of ``cls`` (as resolved through its MRO)."""
    for name in FLOAT32_METHODS:
        setattr(cls, name, via_float32(getattr(cls, name)))
    return cls
