"""How burn dtypes live in WGSL storage buffers.

bool is stored as u32 (0/1: WGSL has no 1-byte storage type); float16 needs the adapter's
``shader-f16``. float64 and int64 are not supported: WGSL has neither. Data of those dtypes is mapped
by the frontend (``burn.tensor``/``from_numpy`` of float64/int64 arrays give float32/int32, the
backend's defaults); an explicit ``dtype=burn.float64`` request is a ``DTypeError``.
"""

from __future__ import annotations

from burn import _dtype as D

# burn dtype -> WGSL storage type
WGSL = {D.float32: "f32", D.float16: "f16", D.int32: "i32", D.uint32: "u32", D.bool_: "u32"}
# burn dtype -> bytes per element in storage
ELEM_BYTES = {D.float32: 4, D.float16: 2, D.int32: 4, D.uint32: 4, D.bool_: 4}
# burn dtype -> expression-table class ("f" float, "i" signed, "u" unsigned and bool)
CLASS = {D.float32: "f", D.float16: "f", D.int32: "i", D.uint32: "u", D.bool_: "u"}
BASE_DTYPES = frozenset({D.float32, D.int32, D.uint32, D.bool_})


def np_storage(dtype: D.DType):
    """The numpy dtype of the storage representation."""
    import numpy as np

    return {
        D.float32: np.float32,
        D.float16: np.float16,
        D.int32: np.int32,
        D.uint32: np.uint32,
        D.bool_: np.uint32,
    }[dtype]


def scalar_bits(dtype: D.DType, value: float | int | bool) -> int:
    """A scalar as the u32 bit pattern the kernels read from metadata (f16 scalars travel as f32)."""
    import struct

    if dtype.is_float:
        return struct.unpack("<I", struct.pack("<f", float(value)))[0]
    if dtype.is_bool:
        return 1 if value else 0
    return int(value) & 0xFFFFFFFF


def scalar_load(dtype: D.DType, expr: str) -> str:
    """WGSL that turns a metadata u32 back into a value of ``dtype``."""
    return {
        D.float32: f"bitcast<f32>({expr})",
        D.float16: f"f16(bitcast<f32>({expr}))",
        D.int32: f"bitcast<i32>({expr})",
        D.uint32: expr,
        D.bool_: expr,
    }[dtype]
