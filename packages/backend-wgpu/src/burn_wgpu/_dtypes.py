"""How burn dtypes live in WGSL storage buffers.

bool is stored as u32 (0/1: WGSL has no 1-byte storage type); float16 needs the adapter's
``shader-f16``.

int64 and float64 (``WIDE``) are stored natively as WGSL ``i64``/``f64`` on a native device whose
adapter has ``shader-int64`` and ``shader-f64`` (wgpu-native's naga accepts both types in WGSL once
the device was created with those features; WebGPU has neither, so browser-portable mode leaves them
out, and there the frontend maps float64/int64 data to float32/int32 as before). Their kernels use
the expression-table classes ``"l"`` (i64) and ``"d"`` (f64): integer arithmetic, comparisons,
min/max, rounding, sqrt, division and remainders run on the device, exact in 64 bits (f64 trunc and
round are built from floor/ceil: lavapipe's return values beyond 2^31 unchanged); the float64
transcendental functions (exp, log, sin, tanh, erf, pow, ...) run on the host through the numpy
reference backend (Vulkan's extended instructions are 32-bit only: lavapipe's f64 ``exp`` returns
garbage, and f32 would lose float64's precision). 64-bit scalars travel as one-element tensors
(metadata words are 32-bit).

The narrow ints int8, uint8 and int16 (``NARROW``) are real dtypes stored widened, one element per
32-bit word (i32 for the signed ones, u32 for uint8), so every kernel family reads them as it reads
int32/uint32. Every kernel that stores a computed value of a narrow dtype wraps it into the dtype's
range (``wrap``: two's complement, NumPy's integer overflow), so a stored word always holds a value
of its dtype; kernels that only move or compare values (copies, gather, select, sort, max) need no
wrap. Casts from a float into a narrow int truncate toward zero and wrap a value within int32's range
(``int8(300.7)`` is 44, ``uint8(-1.5)`` is 255); NaN, infinities and values outside int32's range give
0. That is what NumPy's ``astype`` gives on x86-64, and on every platform for in-range values.

Why widened and not packed four (or two) to a word: WGSL has no 8- or 16-bit storage types, and
packed storage would need every kernel family to unpack on load and to pack with atomics or
whole-word ownership on store; widened storage costs memory (4x for the 1-byte dtypes, 2x for int16)
and is accepted, for correctness now, on every adapter. uint16 has no burn dtype (ONNX uint16 data
becomes int32 on every backend); it would be one more row in each table here.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import burn

if TYPE_CHECKING:
    import numpy as np

# narrow int dtype -> its width in bits (stored one element per 32-bit word, wrapped on store)
NARROW: dict[burn.DType, int] = {burn.int8: 8, burn.uint8: 8, burn.int16: 16}
# 64-bit dtype -> WGSL storage type (needs the device features in ``WIDE_FEATURES``)
WIDE: dict[burn.DType, str] = {burn.int64: "i64", burn.float64: "f64"}
WIDE_FEATURES: dict[burn.DType, str] = {burn.int64: "shader-int64", burn.float64: "shader-f64"}
# burn dtype -> WGSL storage type
WGSL = {
    burn.float32: "f32",
    burn.float16: "f16",
    burn.int32: "i32",
    burn.uint32: "u32",
    burn.bool_: "u32",
    **{dt: "i32" if dt.kind == "i" else "u32" for dt in NARROW},
    **WIDE,
}
# burn dtype -> bytes per element in storage
ELEM_BYTES = {dt: {"f16": 2, "i64": 8, "f64": 8}.get(t, 4) for dt, t in WGSL.items()}
# burn dtype -> expression-table class ("f" float, "i" signed, "u" unsigned and bool, "l" i64, "d" f64)
CLASS = {dt: {"i64": "l", "f64": "d"}.get(t, "f" if t[0] == "f" else t[0]) for dt, t in WGSL.items()}
BASE_DTYPES = frozenset({burn.float32, burn.int32, burn.uint32, burn.bool_, *NARROW})


def word_dtype(dtype: burn.DType) -> burn.DType:
    """The 32-bit dtype whose storage a narrow int shares (int8 -> int32, uint8 -> uint32); others
    unchanged. A kernel that neither computes nor wraps may read a narrow tensor as it."""
    if dtype in NARROW:
        return burn.int32 if dtype.kind == "i" else burn.uint32
    return dtype


def wrap(dtype: burn.DType, expr: str) -> str:
    """WGSL of ``expr`` (an i32/u32 value) wrapped into ``dtype``'s range when ``dtype`` is narrow
    (two's complement: sign-extending shifts for the signed ints, a mask for the unsigned ones);
    ``expr`` itself for every other dtype."""
    bits = NARROW.get(dtype)
    if bits is None:
        return expr
    if dtype.kind == "i":
        return f"((({expr}) << {32 - bits}u) >> {32 - bits}u)"  # >> on i32 is arithmetic
    return f"(({expr}) & {(1 << bits) - 1:#x}u)"


def np_storage(dtype: burn.DType) -> type[np.generic]:
    """The numpy dtype of the storage representation."""
    import numpy as np

    storage: dict[str, type[np.generic]] = {
        "f32": np.float32,
        "f16": np.float16,
        "i32": np.int32,
        "u32": np.uint32,
        "i64": np.int64,
        "f64": np.float64,
    }
    return storage[WGSL[dtype]]


def scalar_bits(dtype: burn.DType, value: float | int | bool) -> int:
    """A scalar as the u32 bit pattern the kernels read from metadata (f16 scalars travel as f32;
    64-bit scalars never come here: they travel as one-element tensors)."""
    import struct

    assert dtype not in WIDE, "a 64-bit scalar travels as a tensor"
    if dtype.is_float:
        return struct.unpack("<I", struct.pack("<f", float(value)))[0]
    if dtype.is_bool:
        return 1 if value else 0
    return int(value) & 0xFFFFFFFF


def scalar_load(dtype: burn.DType, expr: str) -> str:
    """WGSL that turns a metadata u32 back into a value of ``dtype``."""
    if dtype is burn.float16:
        return f"f16(bitcast<f32>({expr}))"
    return {"f": f"bitcast<f32>({expr})", "i": f"bitcast<i32>({expr})", "u": expr}[CLASS[dtype]]
