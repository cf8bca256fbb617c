"""burn dtype <-> numpy dtype tables, shared by the numpy backend and by backends whose arrays carry
numpy dtypes (CuPy). Imports numpy, so ``burn.backend`` loads this module on first use of the tables."""

from __future__ import annotations

import numpy as np

from .. import _dtype as D

# every burn dtype but bfloat16 (numpy has none)
NUMPY_DTYPES: dict[D.DType, np.dtype] = {
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
FROM_NUMPY: dict[np.dtype, D.DType] = {v: k for k, v in NUMPY_DTYPES.items()}
