"""burn dtype <-> numpy dtype tables, shared by the numpy backend and by backends whose arrays carry
numpy dtypes (CuPy). Imports numpy, so ``burn.backend`` loads this module on first use of the tables.

numpy has no bfloat16 of its own: ml_dtypes (a dependency of burn-core where it installs, i.e. not
under Pyodide) registers one with numpy (kind ``'V'``, 2 bytes). Importing it costs ~90 ms, so the
tables resolve bfloat16 on first lookup (``NUMPY_DTYPES[burn.bfloat16]``, ``FROM_NUMPY[arr.dtype]``),
never at ``import burn`` or when the numpy backend loads; ``has_bfloat16()`` asks only whether
ml_dtypes is installed.
"""

from __future__ import annotations

import functools
import importlib.util
from typing import Any

import numpy as np

from .. import _dtype as D


@functools.cache
def has_bfloat16() -> bool:
    """Whether ml_dtypes is installed (without importing it)."""
    return importlib.util.find_spec("ml_dtypes") is not None


@functools.cache
def bfloat16_dtype() -> np.dtype:
    """ml_dtypes' numpy bfloat16 dtype (imports ml_dtypes)."""
    try:
        import ml_dtypes
    except ImportError:
        from .._errors import DTypeError

        raise DTypeError(
            "bfloat16 needs the ml_dtypes package (pip install ml_dtypes), which numpy uses for it"
        ) from None
    return np.dtype(ml_dtypes.bfloat16)


def is_bfloat16(dt: Any) -> bool:
    """Whether a numpy (or CuPy) dtype is bfloat16, without importing ml_dtypes."""
    return getattr(dt, "kind", None) == "V" and getattr(dt, "name", None) == "bfloat16"


class _ToNumpy(dict):  # dict[D.DType, np.dtype]
    def __missing__(self, key: D.DType) -> np.dtype:
        if key is D.bfloat16 and has_bfloat16():
            self[key] = value = bfloat16_dtype()
            FROM_NUMPY[value] = D.bfloat16
            return value
        raise KeyError(key)

    def __contains__(self, key: object) -> bool:
        return dict.__contains__(self, key) or (key is D.bfloat16 and has_bfloat16())

    def get(self, key: D.DType, default: Any = None) -> Any:
        return self[key] if key in self else default


class _FromNumpy(dict):  # dict[np.dtype, D.DType]
    def __missing__(self, key: np.dtype) -> D.DType:
        if is_bfloat16(key):
            self[key] = D.bfloat16
            return D.bfloat16
        raise KeyError(key)

    def __contains__(self, key: object) -> bool:
        return dict.__contains__(self, key) or is_bfloat16(key)

    def get(self, key: np.dtype, default: Any = None) -> Any:
        return self[key] if key in self else default


# every burn dtype; bfloat16 through ml_dtypes, resolved on first lookup (above)
NUMPY_DTYPES: dict[D.DType, np.dtype] = _ToNumpy(
    {
        D.float16: np.dtype(np.float16),
        D.float32: np.dtype(np.float32),
        D.float64: np.dtype(np.float64),
        D.int8: np.dtype(np.int8),
        D.uint8: np.dtype(np.uint8),
        D.int16: np.dtype(np.int16),
        D.int32: np.dtype(np.int32),
        D.uint32: np.dtype(np.uint32),
        D.int64: np.dtype(np.int64),
        D.bool_: np.dtype(np.bool_),
    }
)
FROM_NUMPY: dict[np.dtype, D.DType] = _FromNumpy({v: k for k, v in NUMPY_DTYPES.items()})
# the burn dtypes the tables can give: every one, bfloat16 only where ml_dtypes is installed
SUPPORTED: frozenset[D.DType] = frozenset(dict(NUMPY_DTYPES)) | (
    frozenset({D.bfloat16}) if has_bfloat16() else frozenset()
)
