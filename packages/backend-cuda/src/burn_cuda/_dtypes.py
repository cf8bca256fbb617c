"""burn dtypes <-> numpy/CuPy dtypes, and the C types the generated kernels compute in.

CuPy arrays carry numpy dtypes, so the burn <-> numpy tables are the numpy backend's own
(``burn.backend.NUMPY_DTYPES`` / ``FROM_NUMPY``); this module adds the C types of the kernels.

bfloat16 (CuPy >= 14 with ml_dtypes, ``_bf16``): arrays carry ml_dtypes' bfloat16 dtype, and the
kernels take them as ``uint16`` views (their bits): every load converts the bits to float and every
store rounds a float to the nearest-even bfloat16 (``_bf16.PREAMBLE``), so no kernel depends on CuPy's
own (minimal) bfloat16 support or on ``cuda_bf16.h``. ``BF16_ENTRIES`` adds it to the tables below
once a backend has checked that its CuPy can hold bfloat16 arrays.
"""

from __future__ import annotations

import burn
import numpy as np
from burn.backend import FROM_NUMPY, NUMPY_DTYPES

TO_NP: dict[burn.DType, np.dtype] = NUMPY_DTYPES
FROM_NP: dict[np.dtype, burn.DType] = FROM_NUMPY

# the burn dtypes every CuPy holds (bfloat16 is added per backend, when its CuPy can hold it)
BASE_DTYPES: frozenset[burn.DType] = frozenset(d for d in burn.backend.ALL_DTYPES if d is not burn.bfloat16)

# C type of each element as CuPy declares it in kernels ("float16" is CuPy's half class)
C_TYPE: dict[np.dtype, str] = {
    np.dtype(np.float16): "float16",
    np.dtype(np.float32): "float",
    np.dtype(np.float64): "double",
    np.dtype(np.int8): "signed char",
    np.dtype(np.uint8): "unsigned char",
    np.dtype(np.int16): "short",
    np.dtype(np.int32): "int",
    np.dtype(np.uint32): "unsigned int",
    np.dtype(np.int64): "long long",
    np.dtype(np.bool_): "bool",
}

# C type the arithmetic runs in: half computes in float (as PyTorch does), the rest in their own type
COMPUTE_TYPE: dict[np.dtype, str] = {**C_TYPE, np.dtype(np.float16): "float"}


def is_bf16(dt: np.dtype) -> bool:
    """Whether a numpy dtype is ml_dtypes' bfloat16 (kind 'V'; burn holds no other 'V' dtype)."""
    return dt.kind == "V"


def add_bfloat16(bf16: np.dtype) -> None:
    """Add bfloat16's entries: stored as its 16 bits (``unsigned short``), computed in float."""
    C_TYPE[bf16] = "unsigned short"
    COMPUTE_TYPE[bf16] = "float"


def param_dtype(dt: np.dtype) -> np.dtype:
    """The dtype a kernel declares for arrays of ``dt``: bfloat16 as its bits (uint16)."""
    return np.dtype(np.uint16) if is_bf16(dt) else dt


def scalar_dtype(dt: np.dtype) -> np.dtype:
    """The dtype a fused kernel takes a scalar of ``dt`` in: bfloat16 as float32 (rounded in-kernel)."""
    return np.dtype(np.float32) if is_bf16(dt) else dt
