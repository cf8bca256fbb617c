"""Launching a ``burn.custom`` op's CUDA C kernel as burn-cuda launches its own ``RawKernel``s.

The source is compiled once per process (``_rawkernels.compiled``, NVRTC through CuPy, published as
compile events) and launched on the device's stream (so a CUDA graph capturing a fusion program
captures it) with the arguments: the inputs (dense, row-major), the output, then ``Cuda.params``'s
scalars (a Python int as ``int``, a float as ``float``, a numpy scalar as its own type). Several
variants are tuned by the backend's tuner (``burn.autotune``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
from burn.custom import Cuda, Launch, dispatch

from ._dtypes import TO_NP
from ._rawkernels import compiled

if TYPE_CHECKING:
    from ._backend import CudaBackend


def scalar(value: Any) -> Any:
    """A kernel argument: numpy scalars as they are, bool and int as int32, float as float32."""
    if isinstance(value, np.generic):
        return value
    if isinstance(value, float):
        return np.float32(value)
    return np.int32(int(value))


def launch(backend: CudaBackend, kernel: Any, xs: Sequence[Any], info: Launch) -> Any:
    """Run ``kernel`` (a ``burn.custom.Cuda``) over ``xs`` into a new array of the call's shape."""
    if not isinstance(kernel, Cuda):
        raise TypeError(f"{info.op}: the cuda kernel must be a burn.custom.Cuda, got {type(kernel).__name__}")
    cp = backend._on()
    ins = [cp.ascontiguousarray(x) for x in xs]
    out = cp.empty(info.shape, dtype=TO_NP[info.dtype])
    if info.numel == 0:
        return out
    label = f"custom_{info.op}" + (f"_{kernel.name}" if kernel.name else "")
    fn = compiled(("custom", info.op, kernel.entry, kernel.source), kernel.source, kernel.entry, label)
    args = (*ins, out, *(scalar(w) for w in kernel.words(info)))
    fn(kernel.launch_grid(info), tuple(kernel.block), args)
    return out


def run(backend: CudaBackend, name: str, xs: Sequence[Any], attrs: tuple[tuple[str, Any], ...]) -> Any:
    """``CudaBackend.custom``: the op's CUDA kernel (tuned among variants), else its fallbacks."""
    from ._tuning import tuner

    return dispatch(backend, name, xs, attrs, key="cuda", launch=launch, tuner=tuner)
