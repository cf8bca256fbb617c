"""Compiled cpu kernels: burn.fusion's plans rendered to C (``_c_renderer``), built by the system C
compiler (``_toolchain``) and run on numpy buffers (``_runtime``) by the cpu device's fusion runtime;
and hand-written kernels the plain cpu device's numpy backend calls op by op where numpy wastes the
time (``_ops``: grouped/depthwise convs in ``_ops_conv`` (depthwise with a ReLU/clip epilogue) and their gradients in ``_ops_conv_grad``, pools and the max pool's backward scatter in
``_ops_pool``, softmax and layer-norm rows in ``_ops_rows``, a 1x1 conv's bias/residual/clip epilogue in
``_ops_epilogue``).

``burn.device("cpu")`` (and ``fusion=True``) use them where a compiler is found, and numpy alone where
none is (Pyodide, no ``cc``/``gcc``/``clang``) or ``BURN_CPU_NATIVE=0``; ``burn info`` says which.

Kernels other parts of burn-core may call on numpy arrays (each returns None where it does not take
the call, and the caller runs numpy): ``conv2d``, ``conv_transpose2d``, ``conv_weight_grad2d`` (grouped/
depthwise), ``max_pool2d``, ``max_pool2d_values``, ``avg_pool2d``, ``scatter_add_rows``, ``softmax_rows``, ``layer_norm_rows``.
"""

from __future__ import annotations

from typing import Any

from ._ops import THRESHOLDS
from ._ops_conv import conv2d
from ._ops_conv_grad import conv_transpose2d, conv_weight_grad2d
from ._ops_pool import avg_pool2d, max_pool2d, max_pool2d_values, scatter_add_rows
from ._ops_rows import layer_norm_rows, softmax_rows
from ._toolchain import Toolchain, native_dir, toolchain

# what the plain cpu device runs compiled (op by op, past each op's size threshold)
PLAIN_OPS = (
    "conv2d groups>1 (forward, input and weight gradients; depthwise with its ReLU/clip)",
    "max_pool2d",
    "max_pool2d values only (ONNX inference)",
    "1x1 conv epilogue (bias, residual, clip in one pass after the GEMM)",
    "avg_pool2d",
    "max_pool backward",
    "softmax",
    "log_softmax",
)


def runtime_for(backend: Any) -> Any:
    """The numpy backend's fusion runtime: a ``NativeRuntime`` where a compiler works, else None."""
    tc = toolchain()
    if not tc.available:
        return None
    from ._runtime import NativeRuntime

    return NativeRuntime(backend, tc)


def describe() -> dict[str, Any]:
    """What ``burn info`` reports: whether cpu kernels are compiled, with which compiler and flags, or
    why not, and where they are cached."""
    tc = toolchain()
    return {
        "native": tc.available,
        "compiler": tc.path,
        "flags": list(tc.flags),
        "openmp": tc.openmp,
        "mvec": tc.mvec,
        "reason": tc.reason,
        "cache": str(native_dir()),
        "plain_ops": list(PLAIN_OPS) if tc.available else [],
    }


__all__ = [
    "PLAIN_OPS",
    "THRESHOLDS",
    "Toolchain",
    "avg_pool2d",
    "conv2d",
    "conv_transpose2d",
    "conv_weight_grad2d",
    "describe",
    "layer_norm_rows",
    "max_pool2d",
    "max_pool2d_values",
    "native_dir",
    "runtime_for",
    "scatter_add_rows",
    "softmax_rows",
    "toolchain",
]
