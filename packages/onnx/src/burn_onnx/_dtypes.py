"""ONNX element types as burn dtypes, and the dtype a backend uses for one it lacks."""

from __future__ import annotations

import warnings
from typing import Any

import burn

# TensorProto.DataType -> burn dtype name; types burn has no dtype for widen to one that holds them
ONNX_TO_BURN: dict[int, str] = {
    1: "float32",  # FLOAT
    2: "uint8",
    3: "int8",
    4: "int32",  # UINT16
    5: "int16",
    6: "int32",
    7: "int64",
    9: "bool",
    10: "float16",
    11: "float64",
    12: "uint32",
    13: "int64",  # UINT64
    16: "bfloat16",
}
BURN_TO_ONNX: dict[str, int] = {
    "float32": 1,
    "uint8": 2,
    "int8": 3,
    "int16": 5,
    "int32": 6,
    "int64": 7,
    "bool": 9,
    "float16": 10,
    "float64": 11,
    "uint32": 12,
    "bfloat16": 16,
}
ONNX_NAMES: dict[int, str] = {
    0: "undefined",
    1: "float",
    2: "uint8",
    3: "int8",
    4: "uint16",
    5: "int16",
    6: "int32",
    7: "int64",
    8: "string",
    9: "bool",
    10: "float16",
    11: "double",
    12: "uint32",
    13: "uint64",
    14: "complex64",
    15: "complex128",
    16: "bfloat16",
    17: "float8e4m3fn",
    18: "float8e4m3fnuz",
    19: "float8e5m2",
    20: "float8e5m2fnuz",
    21: "uint4",
    22: "int4",
    23: "float4e2m1",
}


def burn_dtype(elem_type: int) -> burn.DType:
    """The burn dtype of an ONNX element type; ValueError for types burn cannot hold (string, complex)."""
    name = ONNX_TO_BURN.get(elem_type)
    if name is None:
        raise ValueError(f"ONNX element type {ONNX_NAMES.get(elem_type, elem_type)} has no burn dtype")
    return burn.dtype(name)


def on_backend(dt: burn.DType, backend: Any) -> burn.DType:
    """``dt``, or the backend's default of the same kind when it lacks ``dt`` (int64 -> int32 on wgpu)."""
    if dt in backend.dtypes:
        return dt
    if dt.is_bool:
        return dt
    if dt.is_float:
        return backend.default_float
    return backend.default_int


def warn_narrowed(backend: Any, dtypes: set[burn.DType], source: str) -> None:
    """One warning per model for float types the backend lacks (float64 -> float32 on wgpu)."""
    lost = sorted(d.name for d in dtypes if d.is_float and d not in backend.dtypes)
    if lost:
        warnings.warn(
            f"{source}: backend {backend.name!r} has no {', '.join(lost)}: those tensors run as "
            f"{backend.default_float.name} (precision may be lost)",
            UserWarning,
            stacklevel=4,
        )


# TensorProto.DataType -> numpy dtype name: what a graph output is returned as (``OnnxModel.run``)
ONNX_TO_NUMPY: dict[int, str] = {
    1: "float32",
    2: "uint8",
    3: "int8",
    4: "uint16",
    5: "int16",
    6: "int32",
    7: "int64",
    9: "bool",
    10: "float16",
    11: "float64",
    12: "uint32",
    13: "uint64",
}


def on_device_declared(t: burn.Tensor, elem_type: int) -> burn.Tensor:
    """``t`` cast on its device to the declared ONNX element type when the backend holds that type
    and it differs (an int64 ArgMax computed in int32, an int64 output of a narrowed intermediate);
    ``t`` itself otherwise (types burn lacks: uint16, uint64; types the backend lacks: ``run`` gives
    them on the host)."""
    name = ONNX_TO_BURN.get(elem_type)
    if name is None or ONNX_TO_NUMPY.get(elem_type, name) != name:  # uint16, uint64: no burn dtype
        return t
    dt = burn.dtype(name)
    if t.dtype is dt or dt not in t.device.backend.dtypes:
        return t
    if dt.is_int and t.dtype.is_int and dt.itemsize < t.dtype.itemsize:
        return t  # a narrowing cast would wrap silently: ``run`` range-checks it on the host instead
    if dt.is_float != t.dtype.is_float:
        return t  # a converter's different kind is not this function's to hide
    return t.cast(dt)


def as_declared(array: Any, elem_type: int, output: str, source: str, computed: str) -> Any:
    """A numpy array of an output as its declared ONNX element type. Integer values that the declared
    type cannot hold raise ``OnnxRuntimeError`` naming the output (never a silent wrap); element types
    numpy has no dtype for (bfloat16, float8, strings) come back as they are."""
    import numpy as np

    from ._errors import OnnxRuntimeError

    name = ONNX_TO_NUMPY.get(elem_type)
    arr = np.asarray(array)
    if name is None or arr.dtype.name == name:
        return arr
    want = np.dtype(name)
    if want.kind in "iu" and arr.dtype.kind in "iub" and arr.size:
        info = np.iinfo(want)
        lo, hi = int(arr.min()), int(arr.max())
        if lo < info.min or hi > info.max:
            bad = lo if lo < info.min else hi
            raise OnnxRuntimeError(
                f"{source}: output {output!r} is declared {ONNX_NAMES[elem_type]}, but holds {bad}, which "
                f"{ONNX_NAMES[elem_type]} cannot hold (computed as {computed})"
            )
    return arr.astype(want)
