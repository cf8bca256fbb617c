"""The compiled max pool's small-window kernels (``burn._native._ops_pool``): a 2x2 or 3x3 window at
dilation 1 runs one output at a time, the 2x2/stride-2 unpadded window branch-free over output rows
(a plane holding a NaN redone with the NaN rule). Each against the numpy path exactly, values and
indices: ties (the first maximum wins), NaN (the first NaN wins), inf and -inf, padding, ceil mode,
odd sizes, one NaN plane among clean ones, float32 and float64; and the pooled values against a
direct float64 reference over the windows."""

from __future__ import annotations

from typing import Any

import burn
import numpy as np
import pytest
from burn import _native
from burn._native import _ops_pool

TC = _native.toolchain()
needs_cc = pytest.mark.skipif(not TC.available, reason=f"no working C compiler: {TC.reason}")
B = burn.device("cpu").backend

# (kernel, stride, padding, ceil_mode): the CNN pools the small kernels take
CASES = [
    (2, 2, 0, False),
    (2, 2, 0, True),
    (2, 1, 0, False),
    (2, 2, 1, False),
    (3, 2, 1, False),
    (3, 2, 1, True),
    (3, 1, 1, False),
    (3, 2, 0, False),
    (3, 3, 0, False),
]


def _numpy_pool(monkeypatch: pytest.MonkeyPatch, x: np.ndarray, k: int, s: int, p: int, ceil: bool) -> Any:
    with monkeypatch.context() as m:
        m.setenv("BURN_CPU_NATIVE", "0")
        return B.max_pool(x, (k, k), (s, s), (p, p), (1, 1), ceil)


@needs_cc
@pytest.mark.parametrize("dtype", (np.float32, np.float64))
@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("size", ((8, 8), (7, 9), (4, 4), (13, 6)))
def test_small_window_max_pool_equals_the_numpy_path(
    dtype: Any, case: tuple[int, int, int, bool], size: tuple[int, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    k, s, p, ceil = case
    rng = np.random.default_rng(hash((case, size)) % 2**32)
    x = rng.standard_normal((3, 5, *size)).astype(dtype)
    x[0, 1].flat[rng.integers(0, x[0, 1].size, 3)] = 0.25  # ties in one plane
    x[1, 2].flat[rng.integers(0, x[1, 2].size, 2)] = np.nan  # NaN in another
    x[2, 3].flat[rng.integers(0, x[2, 3].size, 3)] = rng.choice([np.inf, -np.inf], 3)
    x[2, 4] = -np.inf  # a plane of -inf: every window's first tap wins
    x[0, 4] = np.round(rng.standard_normal(size))  # many ties
    got = _ops_pool.max_pool2d(x, (k, k), (s, s), (p, p), (1, 1), ceil, force=True)
    want = _numpy_pool(monkeypatch, x, k, s, p, ceil)
    assert got is not None
    np.testing.assert_array_equal(got[0], want[0])
    np.testing.assert_array_equal(got[1], want[1])


@needs_cc
def test_2x2_pool_values_match_a_direct_reference() -> None:
    rng = np.random.default_rng(0)
    x = rng.standard_normal((4, 6, 10, 12)).astype(np.float32)
    got = _ops_pool.max_pool2d(x, (2, 2), (2, 2), (0, 0), (1, 1), False, force=True)
    assert got is not None
    windows = (
        x.astype(np.float64).reshape(4, 6, 5, 2, 6, 2).transpose(0, 1, 2, 4, 3, 5).reshape(4, 6, 5, 6, 4)
    )
    np.testing.assert_array_equal(got[0], windows.max(-1).astype(np.float32))
    # each index points at its window's maximum in the flat plane
    planes = x.reshape(4, 6, -1)
    np.testing.assert_array_equal(
        np.take_along_axis(planes, got[1].reshape(4, 6, -1), -1).reshape(got[0].shape), got[0]
    )


@needs_cc
def test_pool_through_the_backend_trains_the_same(monkeypatch: pytest.MonkeyPatch) -> None:
    """The numpy backend's max_pool (compiled above its threshold) gives the numpy-only result."""
    rng = np.random.default_rng(1)
    x = rng.standard_normal((32, 16, 8, 8)).astype(np.float32)
    got = B.max_pool(x, (2, 2), (2, 2), (0, 0), (1, 1), False)
    want = _numpy_pool(monkeypatch, x, 2, 2, 0, False)
    np.testing.assert_array_equal(got[0], want[0])
    np.testing.assert_array_equal(got[1], want[1])
