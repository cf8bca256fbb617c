"""The backend contract (Burn's ``Backend`` trait) that every backend implements.

See ``Backend`` for the required core and the defaults built on it, and ``_optable`` for the shared
element-wise and reduction op names.
"""

from ._base import Backend, Slices, required
from ._optable import (
    ARG_REDUCE_OPS,
    BINARY_OPS,
    COMPARISON_OPS,
    REDUCE_OPS,
    UNARY_BOOL_RESULT,
    UNARY_OPS,
)
from ._random import host_rng

__all__ = [
    "ARG_REDUCE_OPS",
    "BINARY_OPS",
    "COMPARISON_OPS",
    "REDUCE_OPS",
    "UNARY_BOOL_RESULT",
    "UNARY_OPS",
    "Backend",
    "Slices",
    "host_rng",
    "required",
]
