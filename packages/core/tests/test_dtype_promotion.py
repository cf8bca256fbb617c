"""The dtype promotion table (burn._dtype) checked against numpy's for tensor-tensor ops, plus the
documented exceptions (float16 + bfloat16 -> float32; Python scalars are weak)."""

from __future__ import annotations

import itertools

import burn
import numpy as np
import pytest
from burn import _dtype as D

NP_DTYPES = [d for d in D.ALL_DTYPES if d is not D.bfloat16]


@pytest.mark.parametrize("a,b", list(itertools.product(NP_DTYPES, NP_DTYPES)))
def test_promote_types_matches_numpy(a, b):
    # numpy widens the float for int + float (int16 + float16 -> float32); burn keeps the float, as
    # PyTorch and Burn do (the documented table in burn._dtype)
    if a.is_float != b.is_float and not (a.is_bool or b.is_bool):
        expected = (a if a.is_float else b).name
    else:
        expected = np.promote_types(a.name, b.name).name
    assert burn.promote_types(a, b).name == expected
    assert burn.promote_types(a, b) is burn.promote_types(b, a)


def test_bfloat16_promotion():
    assert burn.promote_types(D.float16, D.bfloat16) is D.float32
    assert burn.promote_types(D.bfloat16, D.float32) is D.float32
    assert burn.promote_types(D.bfloat16, D.int64) is D.bfloat16
    assert burn.promote_types(D.bool_, D.bfloat16) is D.bfloat16


@pytest.mark.parametrize("a,b", list(itertools.product(NP_DTYPES, NP_DTYPES)))
def test_tensor_add_result_dtype(a, b):
    x = burn.ones(2, dtype=a)
    y = burn.ones(2, dtype=b)
    out = x * y  # mul is defined on bool too
    promoted = burn.promote_types(a, b)
    assert out.dtype is promoted
    assert out.dtype is out.backend.dtype_of(out.primitive)  # cached dtype agrees with the backend


@pytest.mark.parametrize(
    "dtype,scalar,expected",
    [
        (D.float16, 2, D.float16),
        (D.float16, 2.5, D.float16),
        (D.int8, 3, D.int8),
        (D.uint8, 3, D.uint8),
        (D.int32, 2.5, D.float32),
        (D.bool_, 1, D.int64),
        (D.bool_, 1.5, D.float32),
        (D.bool_, True, D.int64),  # add on bool computes in the default int
        (D.int64, True, D.int64),
        (D.float64, 1, D.float64),
    ],
)
def test_python_scalars_are_weak(dtype, scalar, expected):
    x = burn.ones(3, dtype=dtype)
    assert (x + scalar).dtype is expected
    assert (scalar + x).dtype is expected


def test_dtype_lookup():
    assert burn.dtype("float32") is burn.float32
    assert burn.dtype(np.float64) is burn.float64
    assert burn.dtype(np.dtype("int8")) is burn.int8
    assert burn.dtype(float) is burn.float32 and burn.dtype(int) is burn.int64
    assert burn.dtype(bool) is burn.bool
    with pytest.raises(TypeError, match=r"dtype: expected one of .*float32.*got 'complex64'"):
        burn.dtype("complex64")


def test_dtype_pickles_to_the_same_object():
    import pickle

    for d in D.ALL_DTYPES:
        assert pickle.loads(pickle.dumps(d)) is d
