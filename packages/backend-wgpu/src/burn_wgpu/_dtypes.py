"""How burn dtypes live in WGSL storage buffers.

bool is stored as u32 (0/1: WGSL has no 1-byte storage type); float16 needs the adapter's
``shader-f16``. float64 and int64 are not supported: WGSL has neither. Data of those dtypes is mapped
by the frontend (``burn.tensor``/``from_numpy`` of float64/int64 arrays give float32/int32, the
backend's defaults); an explicit ``dtype=burn.float64`` request is a ``DTypeError``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import burn

if TYPE_CHECKING:
    import numpy as np

# burn dtype -> WGSL storage type
WGSL = {burn.float32: "f32", burn.float16: "f16", burn.int32: "i32", burn.uint32: "u32", burn.bool_: "u32"}
# burn dtype -> bytes per element in storage
ELEM_BYTES = {burn.float32: 4, burn.float16: 2, burn.int32: 4, burn.uint32: 4, burn.bool_: 4}
# burn dtype -> expression-table class ("f" float, "i" signed, "u" unsigned and bool)
CLASS = {burn.float32: "f", burn.float16: "f", burn.int32: "i", burn.uint32: "u", burn.bool_: "u"}
BASE_DTYPES = frozenset({burn.float32, burn.int32, burn.uint32, burn.bool_})


def np_storage(dtype: burn.DType) -> type[np.generic]:
    """The numpy dtype of the storage representation."""
    import numpy as np

    storage: dict[burn.DType, type[np.generic]] = {
        burn.float32: np.float32,
        burn.float16: np.float16,
        burn.int32: np.int32,
        burn.uint32: np.uint32,
        burn.bool_: np.uint32,
    }
    return storage[dtype]


def scalar_bits(dtype: burn.DType, value: float | int | bool) -> int:
    """A scalar as the u32 bit pattern the kernels read from metadata (f16 scalars travel as f32)."""
    import struct

    if dtype.is_float:
        return struct.unpack("<I", struct.pack("<f", float(value)))[0]
    if dtype.is_bool:
        return 1 if value else 0
    return int(value) & 0xFFFFFFFF


def scalar_load(dtype: burn.DType, expr: str) -> str:
    """WGSL that turns a metadata u32 back into a value of ``dtype``."""
    return {
        burn.float32: f"bitcast<f32>({expr})",
        burn.float16: f"f16(bitcast<f32>({expr}))",
        burn.int32: f"bitcast<i32>({expr})",
        burn.uint32: expr,
        burn.bool_: expr,
    }[dtype]
