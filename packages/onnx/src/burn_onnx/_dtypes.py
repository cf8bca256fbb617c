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
