"""ONNX element types as burn dtypes, and the dtype a backend uses for one it lacks."""

from __future__ import annotations

import warnings
from typing import Any

import burn
import numpy as np

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


# ONNX types burn has no dtype for, held in one that represents every value exactly: 8-, 6- and 4-bit
# floats in float32, 4- and 2-bit integers in int8/uint8 (and uint16/uint64 above). A value of one of
# these types is rounded to its grid where it is made (Cast, QuantizeLinear) and given back in its own
# numpy type (ml_dtypes) at the model's edges (``OnnxModel.run``).
STORED_AS: dict[int, str] = {
    **{code: "float32" for code in (17, 18, 19, 20, 23, 24, 27, 28)},
    21: "uint8",  # UINT4
    22: "int8",  # INT4
    25: "uint8",  # UINT2
    26: "int8",  # INT2
}
WIDENED = frozenset({4, 13, *STORED_AS})  # element types held in a wider burn dtype


def numpy_dtype(elem_type: int) -> np.dtype:
    """The numpy dtype of an ONNX element type (ml_dtypes for bfloat16, float8, int4, ...)."""
    from onnx import helper

    return np.dtype(helper.tensor_dtype_to_np_dtype(elem_type))


def elem_type_of(dt: np.dtype) -> int | None:
    """The ONNX element type of a numpy dtype (None for strings and objects)."""
    from onnx import helper

    try:
        return int(helper.np_dtype_to_tensor_dtype(dt))
    except (KeyError, TypeError, ValueError):
        return None


def stored(arr: np.ndarray) -> np.ndarray:
    """``arr`` in the numpy dtype burn holds its values in (unchanged when burn has its dtype)."""
    if arr.dtype.kind in "OSUb":
        return arr
    code = elem_type_of(arr.dtype)
    name = STORED_AS.get(code) if code is not None else None
    if name is None and code in (4, 13):
        name = ONNX_TO_BURN[code]
    return arr if name is None else arr.astype(name)


def on_grid(arr: np.ndarray, elem_type: int, saturate: bool = True, round_mode: str = "up") -> np.ndarray:
    """Float data rounded to the values ``elem_type`` (a float8/float4 type held in float32) can hold,
    as float32; with ``saturate``, finite values beyond the type's range (and infinities, for types
    without them) become its largest value, as ONNX's Cast and QuantizeLinear define; float8e8m0 rounds
    as ``round_mode`` (up, down, nearest) says."""
    import ml_dtypes

    target = numpy_dtype(elem_type)
    x = np.asarray(arr, dtype=np.float32)
    if elem_type == 24:  # float8e8m0: a power of two, rounded as ``round_mode`` says
        return _power_of_two(x, round_mode)
    if saturate:
        big = float(ml_dtypes.finfo(target).max)
        x = np.clip(x, -big, big).astype(np.float32)  # NaN stays NaN
    return x.astype(target).astype(np.float32)


def _power_of_two(x: np.ndarray, round_mode: str) -> np.ndarray:
    """float8e8m0's values: 2**e for e in [-127, 127] (NaN for NaN and, unsaturated, infinities)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        e = np.log2(np.abs(x.astype(np.float64)))
    rounded = {"up": np.ceil, "down": np.floor}.get(round_mode, np.rint)(e)
    out = np.exp2(np.clip(rounded, -127, 127))
    return np.where(np.isnan(x), np.nan, out).astype(np.float32)


def burn_dtype(elem_type: int) -> burn.DType:
    """The burn dtype of an ONNX element type; ValueError for types burn cannot hold (string, complex)."""
    name = ONNX_TO_BURN.get(elem_type) or STORED_AS.get(elem_type)
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
    type cannot hold raise ``OnnxRuntimeError`` naming the output (never a silent wrap); the types burn
    holds in a wider dtype (float8, float4, int4, int2: ``STORED_AS``) and bfloat16 (float32 on wgpu)
    come back as their ml_dtypes type; strings as they are."""
    import ml_dtypes
    import numpy as np

    from ._errors import OnnxRuntimeError

    name = ONNX_TO_NUMPY.get(elem_type)
    arr = np.asarray(array)
    if elem_type in STORED_AS or elem_type == 16:  # bfloat16 too, from a device computing it in float32
        want = numpy_dtype(elem_type)
    elif name is None or arr.dtype.name == name:
        return arr
    else:
        want = np.dtype(name)
    if want.kind in "iuV" and arr.dtype.kind in "iub" and arr.size:
        info = ml_dtypes.iinfo(want)
        lo, hi = int(arr.min()), int(arr.max())
        if lo < info.min or hi > info.max:
            bad = lo if lo < info.min else hi
            raise OnnxRuntimeError(
                f"{source}: output {output!r} is declared {ONNX_NAMES[elem_type]}, but holds {bad}, which "
                f"{ONNX_NAMES[elem_type]} cannot hold (computed as {computed})"
            )
    return arr.astype(want)
