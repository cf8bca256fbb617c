"""The tuned pool family (``_pool.POOL``): every candidate (each workgroup size and outputs per
invocation, and the composed reference) against the numpy backend's max_pool / avg_pool for 1-d and
2-d geometries (strides, padding, dilation, ceil_mode, count_include_pad), float32 / float16 / int32;
max-pool indices exactly equal (NaN included); one tuning run end to end, and the backend methods
(the untuned default) on the same cases."""

from __future__ import annotations

import burn
import numpy as np
import pytest
from burn import autotune
from burn.testing._pool_checks import check_strided_pools
from burn_wgpu import _pool
from burn_wgpu._kernels import pool as KP

CANDIDATES = [c.name for c in _pool.POOL.candidates]

# (x shape, kernel, stride, padding, dilation, ceil_mode)
CASES = [
    ((2, 3, 9, 11), (3, 3), (2, 2), (1, 1), (1, 1), False),
    ((1, 4, 10, 7), (2, 3), (1, 2), (0, 1), (2, 1), True),
    ((2, 2, 8, 8), (2, 2), (2, 2), (0, 0), (1, 1), False),
    ((1, 3, 7, 13), (3, 2), (3, 3), (1, 1), (1, 2), True),  # ceil mode: the last window overhangs
    ((1, 2, 5, 6), (5, 6), (1, 1), (2, 3), (1, 1), False),  # windows larger than half the input
    ((2, 3, 17), (3,), (2,), (1,), (1,), True),  # 1-d
    ((1, 2, 10), (4,), (3,), (2,), (2,), False),
]


@pytest.fixture(scope="module")
def ref():
    """The numpy backend (the reference every candidate is compared with)."""
    return burn.device("cpu").backend


def _lift(case):
    """A case as the 2-d arguments the candidates take (1-d: height 1)."""
    shape, k, s, p, d, ceil = case
    if len(k) == 2:
        return shape, k, s, p, d, ceil
    return shape[:2] + (1,) + shape[2:], (1, *k), (1, *s), (0, *p), (1, *d), ceil


def _data(rng, shape, dtype):
    if dtype is burn.int32:
        return rng.integers(-5, 6, shape).astype(np.int32)  # many ties: the first maximum must win
    x = rng.standard_normal(shape)
    x[..., ::3] = np.round(x[..., ::3])  # some ties among floats too
    return x.astype(np.float16 if dtype is burn.float16 else np.float32)


def _dtype_or_skip(backend, dtype):
    if dtype not in backend.dtypes:
        pytest.skip(f"the adapter has no {dtype.name}")


@pytest.mark.parametrize("name", CANDIDATES)
@pytest.mark.parametrize("dtype", [burn.float32, burn.float16, burn.int32], ids=lambda d: d.name)
@pytest.mark.parametrize("case", CASES, ids=[f"case{i}" for i in range(len(CASES))])
def test_max_candidates_match_numpy(backend, ref, rng, name, dtype, case):
    _dtype_or_skip(backend, dtype)
    shape, k, s, p, d, ceil = case
    x = _data(rng, shape, dtype)
    want_v, want_i = ref.max_pool(ref.from_numpy(x, dtype), k, s, p, d, ceil)
    want_v, want_i = ref.to_numpy(want_v), ref.to_numpy(want_i)
    lshape, lk, ls, lp, ld, _ = _lift(case)
    px = backend.reshape(backend.from_numpy(x, dtype), lshape)
    values, index = _pool.POOL.by_name[name].fn(backend, "max", px, lk, ls, lp, ld, ceil, False)
    got_v = backend.to_numpy(values).reshape(want_v.shape)
    got_i = backend.to_numpy(index).reshape(want_i.shape)
    np.testing.assert_array_equal(got_v, want_v)  # a max is one of the inputs: exact
    np.testing.assert_array_equal(got_i, want_i)


@pytest.mark.parametrize("name", CANDIDATES)
@pytest.mark.parametrize("dtype", [burn.float32, burn.float16], ids=lambda d: d.name)
@pytest.mark.parametrize("count_include_pad", [False, True])
@pytest.mark.parametrize("case", CASES, ids=[f"case{i}" for i in range(len(CASES))])
def test_avg_candidates_match_numpy(backend, ref, rng, name, dtype, count_include_pad, case):
    _dtype_or_skip(backend, dtype)
    shape, k, s, p, _, ceil = case
    x = _data(rng, shape, dtype)
    want = ref.to_numpy(ref.avg_pool(ref.from_numpy(x, dtype), k, s, p, count_include_pad, ceil))
    lshape, lk, ls, lp, _, _ = _lift(case)
    px = backend.reshape(backend.from_numpy(x, dtype), lshape)
    ones = (1, 1)
    got = _pool.POOL.by_name[name].fn(backend, "avg", px, lk, ls, lp, ones, ceil, count_include_pad)
    got = backend.to_numpy(got).reshape(want.shape)
    # float32: summation order only; float16: numpy sums in float16, the kernel in f32
    tol = 2e-3 if dtype is burn.float16 else 1e-6
    np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=tol, atol=tol * 4)


@pytest.mark.parametrize("name", [n for n in CANDIDATES if n != "compose"])
def test_max_nan_takes_the_first_nan(backend, ref, rng, name):
    x = rng.standard_normal((1, 2, 6, 7)).astype(np.float32)
    x[0, 0, 1, 2] = x[0, 0, 2, 1] = x[0, 1, 4, 4] = np.nan
    args = ((3, 3), (2, 2), (1, 1), (1, 1), True)
    want_v, want_i = (ref.to_numpy(t) for t in ref.max_pool(ref.from_numpy(x, burn.float32), *args))
    values, index = _pool.POOL.by_name[name].fn(
        backend, "max", backend.from_numpy(x, burn.float32), *args, False
    )
    np.testing.assert_array_equal(backend.to_numpy(values), want_v)  # NaN == NaN for array_equal
    np.testing.assert_array_equal(backend.to_numpy(index), want_i)


@pytest.mark.parametrize("case", CASES, ids=[f"case{i}" for i in range(len(CASES))])
def test_backend_methods(backend, ref, rng, case):
    """``max_pool``/``avg_pool`` of the backend (the untuned default, strided input, 1-d and 2-d)."""
    shape = case[0]
    check_strided_pools(
        backend, ref, rng.standard_normal(shape[:-1] + (2 * shape[-1],)).astype(np.float32), case
    )


def test_kernel_arguments_are_checked():
    with pytest.raises(ValueError, match="power of two"):
        KP.render("max", burn.float32, 96, 1)
    with pytest.raises(ValueError, match="outputs per invocation"):
        KP.render("max", burn.float32, 64, 0)
    with pytest.raises(TypeError, match="float dtype"):
        KP.render("avg", burn.int32, 64, 1)
    with pytest.raises(ValueError, match="'max' or 'avg'"):
        KP.render("sum", burn.float32, 64, 1)


@pytest.mark.slow
def test_large_pool_tunes_and_caches(tmp_path, monkeypatch, rng):
    monkeypatch.setenv("BURN_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("BURN_AUTOTUNE_BLOCKING", "1")  # tests the tuning run, made at once
    monkeypatch.setenv("BURN_AUTOTUNE", "full")
    from burn_wgpu._backend import WgpuBackend

    seen: list[autotune.AutotuneEvent] = []
    unsubscribe = autotune.subscribe(seen.append)
    try:
        backend = WgpuBackend(0)
        backend.device = "wgpu:test"
        x = rng.standard_normal((4, 8, 128, 128)).astype(np.float32)  # 4.7M outputs x taps: tuned
        px = backend.from_numpy(x, burn.float32)
        args = ((3, 3), (1, 1), (1, 1), (1, 1), False)
        values, index = backend.max_pool(px, *args)
        cpu = burn.device("cpu").backend
        want_v, want_i = (cpu.to_numpy(t) for t in cpu.max_pool(cpu.from_numpy(x, burn.float32), *args))
        np.testing.assert_array_equal(backend.to_numpy(values), want_v)
        np.testing.assert_array_equal(backend.to_numpy(index), want_i)
        key = "max float32 nc32 h128 w128 k3x3 s1x1 p1x1 d1x1"
        entry = backend._autotuner.cache.get(f"pool|{key}")
        assert entry is not None and entry["dropped"] == {}, entry
        assert set(entry["seconds"]) == set(CANDIDATES)
        done = [e for e in seen if e.kind == "autotune" and e.done and e.key == key]
        assert len(done) == 1 and done[0].best == entry["best"]
        # the winner is what runs: a second backend (another process's view) reads the cache
        seen.clear()
        again = WgpuBackend(0)
        again.device = "wgpu:test"
        v2, i2 = again.max_pool(again.from_numpy(x, burn.float32), *args)
        np.testing.assert_array_equal(again.to_numpy(i2), want_i)
        assert [e.kind for e in seen if e.key == key] == ["cache"]
        assert (
            again._autotuner.choice(_pool.POOL, again, "max", again.from_numpy(x, burn.float32), *args, False)
            == entry["best"]
        )
    finally:
        unsubscribe()
