"""burn's dtypes. Pure Python (no numpy import), so ``import burn`` stays light.

Promotion table for binary ops between tensors (``burn.promote_types``), the same for every backend:

==============  ===========================================================================
operands        result
==============  ===========================================================================
same dtype      that dtype
bool + x        x
int + int       the wider int when both are signed or both unsigned; mixed signedness gives the
                smallest signed int holding both (int8 + uint8 -> int16, int32 + uint32 -> int64)
int + float     the float (as PyTorch and Burn; NumPy would widen int16 + float16 to float32)
f16 + bf16      float32
float + float   the wider float
==============  ===========================================================================

Python numbers are weak: ``t + 2`` and ``2 + t`` keep ``t``'s dtype; a float with an int or bool
tensor gives the default float (float32); an int with a bool tensor gives the default int (int64). An
int scalar outside an int tensor's range is an error for arithmetic (``int8_tensor + 300``) and
compares correctly (``int8_tensor < 300``). Ops then adjust the promoted dtype: true division and
float-only functions (exp, sqrt, ...) compute ints in the default float; arithmetic on two bools
(``+ - // % **``) computes in the default int, while ``*``, maximum and minimum stay bool.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np


class DType:
    """A tensor element type: ``burn.float32``, ``burn.int64``, ``burn.bool`` and friends."""

    __slots__ = ("name", "itemsize", "kind", "rank")

    def __init__(self, name: str, itemsize: int, kind: str, rank: int) -> None:
        self.name = name
        self.itemsize = itemsize
        self.kind = kind  # "f" float, "i" signed int, "u" unsigned int, "b" bool
        self.rank = rank

    @property
    def is_float(self) -> bool:
        return self.kind == "f"

    @property
    def is_int(self) -> bool:
        return self.kind in "iu"

    @property
    def is_bool(self) -> bool:
        return self.kind == "b"

    def __repr__(self) -> str:
        return f"burn.{self.name}"

    def __str__(self) -> str:  # error messages read "got float32"
        return self.name

    def __reduce__(self) -> tuple:
        return (dtype, (self.name,))


float16 = DType("float16", 2, "f", 1)
bfloat16 = DType("bfloat16", 2, "f", 1)
float32 = DType("float32", 4, "f", 2)
float64 = DType("float64", 8, "f", 3)
int8 = DType("int8", 1, "i", 0)
uint8 = DType("uint8", 1, "u", 0)
int16 = DType("int16", 2, "i", 1)
int32 = DType("int32", 4, "i", 2)
uint32 = DType("uint32", 4, "u", 2)
int64 = DType("int64", 8, "i", 3)
bool_ = DType("bool", 1, "b", 0)

ALL_DTYPES: tuple[DType, ...] = (
    float16,
    bfloat16,
    float32,
    float64,
    int8,
    uint8,
    int16,
    int32,
    uint32,
    int64,
    bool_,
)
_BY_NAME = {d.name: d for d in ALL_DTYPES}
_BY_NAME.update(
    {"bool_": bool_, "half": float16, "float": float32, "double": float64, "long": int64, "int": int64}
)

DEFAULT_FLOAT = float32
DEFAULT_INT = int64


if TYPE_CHECKING:
    # what ``dtype=`` arguments accept: a DType, a name ("float32"), a numpy dtype or scalar type, a
    # Python type (float, int, bool), or None for the default
    DTypeLike = DType | str | type | np.dtype | None


def dtype(value: object) -> DType:
    """Turn a DType, a name (``"float32"``), a numpy dtype or a Python type into a burn DType.

    >>> burn.dtype("float32"), burn.dtype(int), burn.dtype(np.dtype("int32"))
    (burn.float32, burn.int64, burn.int32)
    """
    if isinstance(value, DType):
        return value
    if value is float:
        return DEFAULT_FLOAT
    if value is int:
        return DEFAULT_INT
    if value is bool:
        return bool_
    name = getattr(value, "name", None) if not isinstance(value, str) else value
    if name is None and isinstance(value, type):
        name = value.__name__  # numpy scalar types: np.float32 -> "float32"
    if isinstance(name, str) and name in _BY_NAME:
        return _BY_NAME[name]
    known = ", ".join(d.name for d in ALL_DTYPES)
    raise TypeError(f"dtype: expected one of {known}, got {value!r}")


def _int_holding(a: DType, b: DType) -> DType:
    if a.kind == b.kind:
        return a if a.rank >= b.rank else b
    signed, unsigned = (a, b) if a.kind == "i" else (b, a)
    if signed.rank > unsigned.rank:
        return signed
    return {0: int16, 1: int32, 2: int64}.get(unsigned.rank, int64)


def promote_types(a: DType, b: DType) -> DType:
    """The result dtype of a binary op on tensors of dtypes ``a`` and ``b`` (table in this module).

    >>> burn.promote_types(burn.int32, burn.float16), burn.promote_types(burn.uint8, burn.int8)
    (burn.float16, burn.int16)
    """
    if a is b:
        return a
    if a.is_bool:
        return b
    if b.is_bool:
        return a
    if a.is_float and b.is_float:
        if a.rank == b.rank:  # float16 with bfloat16
            return float32
        return a if a.rank > b.rank else b
    if a.is_float:
        return a
    if b.is_float:
        return b
    return _int_holding(a, b)
