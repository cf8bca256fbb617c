"""Data a backend cannot hold at full width (float64 on a float32-only backend) is narrowed with a
warning, once per process and pair of dtypes; widening and explicit dtypes stay silent."""

from __future__ import annotations

import warnings
from types import SimpleNamespace

import pytest
from burn import _dtype as D
from burn import _tensor


@pytest.fixture
def backend(monkeypatch):
    monkeypatch.setattr(_tensor, "_NARROWED", set())
    return SimpleNamespace(
        name="narrow",
        dtypes=frozenset({D.float32, D.int32, D.bool_}),
        default_float=D.float32,
        default_int=D.int32,
    )


def test_float64_narrowing_warns_once(backend):
    with pytest.warns(UserWarning, match=r"backend 'narrow' has no float64: float64 data becomes float32"):
        assert _tensor._fallback_dtype(D.float64, backend) is D.float32
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert _tensor._fallback_dtype(D.float64, backend) is D.float32  # once per process


def test_int64_narrowing_names_the_range(backend):
    with pytest.warns(UserWarning, match=r"int64 data becomes int32 \(range may be lost\)"):
        assert _tensor._fallback_dtype(D.int64, backend) is D.int32


def test_supported_and_widening_are_silent(backend):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert _tensor._fallback_dtype(D.float32, backend) is D.float32
        assert _tensor._fallback_dtype(D.float16, backend) is D.float32  # widening loses nothing
        assert _tensor._fallback_dtype(D.int8, backend) is D.int32
