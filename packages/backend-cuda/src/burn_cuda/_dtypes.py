"""burn dtypes <-> numpy/CuPy dtypes, and the C types the generated kernels compute in.

CuPy arrays carry numpy dtypes, so the burn <-> numpy tables are the numpy backend's own
(``burn.backend.NUMPY_DTYPES`` / ``FROM_NUMPY``); this module adds the C types of the kernels.

CuPy has no bfloat16 array dtype, so the backend offers every burn dtype except bfloat16 (like the numpy
backend); bf16 is still available as a *matmul precision* (fp32 operands, bf16 tensor-core products).
"""

from __future__ import annotations

import burn
import numpy as np
from burn.backend import FROM_NUMPY, NUMPY_DTYPES

TO_NP: dict[burn.DType, np.dtype] = NUMPY_DTYPES
FROM_NP: dict[np.dtype, burn.DType] = FROM_NUMPY

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
