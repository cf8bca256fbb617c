"""PyTorch dtype and storage names <-> numpy dtypes: the one table the zip reader and writer share.

bfloat16 and the float8 types come from ml_dtypes (imported on first use, as burn does elsewhere).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .._errors import RecordError

# torch dtype name (as pickled: ``torch.float32``, ``torch.half``) -> numpy dtype name
TORCH_DTYPES: dict[str, str] = {
    "float32": "float32",
    "float": "float32",
    "float64": "float64",
    "double": "float64",
    "float16": "float16",
    "half": "float16",
    "bfloat16": "bfloat16",
    "int64": "int64",
    "long": "int64",
    "int32": "int32",
    "int": "int32",
    "int16": "int16",
    "short": "int16",
    "int8": "int8",
    "uint8": "uint8",
    "uint16": "uint16",
    "uint32": "uint32",
    "uint64": "uint64",
    "bool": "bool",
    "complex64": "complex64",
    "cfloat": "complex64",
    "complex128": "complex128",
    "cdouble": "complex128",
    "float8_e4m3fn": "float8_e4m3fn",
    "float8_e5m2": "float8_e5m2",
    "float8_e4m3fnuz": "float8_e4m3fnuz",
    "float8_e5m2fnuz": "float8_e5m2fnuz",
}

# typed storage class (``torch.FloatStorage``) -> numpy dtype name; what torch.save writes for the
# classic dtypes (newer dtypes go through ``UntypedStorage`` plus a dtype argument)
STORAGE_DTYPES: dict[str, str] = {
    "FloatStorage": "float32",
    "DoubleStorage": "float64",
    "HalfStorage": "float16",
    "BFloat16Storage": "bfloat16",
    "LongStorage": "int64",
    "IntStorage": "int32",
    "ShortStorage": "int16",
    "CharStorage": "int8",
    "ByteStorage": "uint8",
    "BoolStorage": "bool",
    "ComplexFloatStorage": "complex64",
    "ComplexDoubleStorage": "complex128",
}

STORAGE_OF: dict[str, str] = {dt: storage for storage, dt in STORAGE_DTYPES.items()}

_ML_DTYPES = {"bfloat16", "float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz"}


def numpy_dtype(name: str) -> np.dtype[Any]:
    """The numpy dtype called ``name`` (one of the tables' values), ml_dtypes' for bfloat16/float8."""
    if name not in _ML_DTYPES:
        return np.dtype(name)
    try:
        import ml_dtypes
    except ImportError:
        raise RecordError(
            f"the file holds {name} tensors, which need the ml_dtypes package (pip install ml_dtypes)"
        ) from None
    return np.dtype(getattr(ml_dtypes, name))
