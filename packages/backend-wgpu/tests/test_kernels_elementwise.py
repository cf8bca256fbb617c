"""The vec4 element-wise path: dense same-shape operands with numel and offsets multiples of 4 run
four elements per invocation; everything else keeps the scalar kernels. Checked against numpy for
float, int and bool results, scalars, casts and offsets."""

from __future__ import annotations

import burn
import numpy as np
import pytest


@pytest.fixture
def kernels(backend, monkeypatch):
    """Names of the kernels dispatched while the test runs."""
    seen: list[str] = []
    dispatch = backend.ex.dispatch

    def spy(kernel, *args, **kwargs):
        seen.append(kernel.name)
        return dispatch(kernel, *args, **kwargs)

    monkeypatch.setattr(backend.ex, "dispatch", spy)
    return seen


def _up(backend, x):
    dt = {np.float32: burn.float32, np.int32: burn.int32}[x.dtype.type]
    return backend.from_numpy(x, dt)


def test_binary_unary_compare_cast_use_vec4(backend, rng, kernels):
    a = rng.standard_normal(4096).astype(np.float32)
    b = rng.standard_normal(4096).astype(np.float32)
    pa, pb = _up(backend, a), _up(backend, b)
    np.testing.assert_array_equal(backend.to_numpy(backend.binary("add", pa, pb)), a + b)
    np.testing.assert_allclose(backend.to_numpy(backend.unary("exp", pa)), np.exp(a), rtol=1e-5)
    np.testing.assert_array_equal(backend.to_numpy(backend.binary("lt", pa, pb)), a < b)
    np.testing.assert_array_equal(backend.to_numpy(backend.binary("mul", pa, 2.5)), a * np.float32(2.5))
    i = rng.integers(-100, 100, 4096).astype(np.int32)
    np.testing.assert_array_equal(
        backend.to_numpy(backend.cast(_up(backend, i), burn.float32)), i.astype(np.float32)
    )
    np.testing.assert_array_equal(backend.to_numpy(backend.binary("floor_div", _up(backend, i), 7)), i // 7)
    assert kernels and all(name.endswith("_vec4") for name in kernels), kernels


def test_fallbacks_stay_scalar(backend, rng, kernels):
    a = rng.standard_normal((3, 5)).astype(np.float32)  # 15 elements: not a multiple of 4
    pa = _up(backend, a)
    np.testing.assert_array_equal(backend.to_numpy(backend.binary("add", pa, pa)), a + a)
    b = rng.standard_normal((4, 8)).astype(np.float32)
    pb = _up(backend, b)
    row = rng.standard_normal(8).astype(np.float32)
    np.testing.assert_array_equal(backend.to_numpy(backend.binary("add", pb, _up(backend, row))), b + row)
    assert not any(name.endswith("_vec4") for name in kernels), kernels


@pytest.mark.parametrize("start", [1, 4])
def test_offsets(backend, rng, kernels, start):
    x = rng.standard_normal(40).astype(np.float32)
    px = _up(backend, x)
    view = backend.slice(px, ((start, start + 32, 1),))  # a dense view that starts mid-buffer
    got = backend.to_numpy(backend.binary("sub", view, view))
    np.testing.assert_array_equal(got, np.zeros(32, np.float32))
    got = backend.to_numpy(backend.unary("neg", view))
    np.testing.assert_array_equal(got, -x[start : start + 32])
    assert any(name.endswith("_vec4") for name in kernels) == (start == 4), kernels


def test_float16_stays_scalar(backend, rng, kernels):
    if burn.float16 not in backend.dtypes:
        pytest.skip("the adapter has no shader-f16")
    x = rng.standard_normal(64).astype(np.float16)
    px = backend.from_numpy(x, burn.float16)
    np.testing.assert_array_equal(backend.to_numpy(backend.binary("add", px, px)), x + x)
    assert not any(name.endswith("_vec4") for name in kernels), kernels
