"""The tuned pool and reduction families of burn-cuda (``_pool.POOL``, ``_reduce.REDUCE``): every
candidate against the numpy backend (pools: 1-d and 2-d, strides, padding, dilation, ceil_mode,
count_include_pad, float16/32/64 and int64, max-pool indices exactly equal; reductions: sum, mean,
prod, max, min in one and two passes, float16/32/64), bfloat16 through its float32 detour, and one
tuning run per family end to end (tuned, the winner cached, a second backend only reads the cache).
The GPU tests skip cleanly without CuPy or a GPU; the kernel-source checks run everywhere."""

from __future__ import annotations

import burn
import numpy as np
import pytest
from burn.testing._pool_checks import check_strided_pools
from burn_cuda import _pool, _reduce

RNG = np.random.default_rng(5)
BURN = {np.float16: burn.float16, np.float32: burn.float32, np.float64: burn.float64, np.int64: burn.int64}

# (x shape, kernel, stride, padding, dilation, ceil_mode)
CASES = [
    ((2, 3, 9, 11), (3, 3), (2, 2), (1, 1), (1, 1), False),
    ((1, 4, 10, 7), (2, 3), (1, 2), (0, 1), (2, 1), True),
    ((2, 2, 8, 8), (2, 2), (2, 2), (0, 0), (1, 1), False),
    ((1, 3, 7, 13), (3, 2), (3, 3), (1, 1), (1, 2), True),  # ceil mode: the last window overhangs
    ((1, 2, 5, 6), (5, 6), (1, 1), (2, 3), (1, 1), False),
    ((2, 3, 17), (3,), (2,), (1,), (1,), True),  # 1-d
    ((1, 2, 10), (4,), (3,), (2,), (2,), False),
]
CASE_IDS = [f"case{i}" for i in range(len(CASES))]


@pytest.fixture(scope="module")
def ref():
    return burn.device("cpu").backend


@pytest.fixture
def raw(cuda):
    """The CUDA backend itself (under the fusion decorator)."""
    b = cuda.backend
    return getattr(b, "inner", b)


def _lift(x, case):
    shape, k, s, p, d, ceil = case
    if len(k) == 2:
        return x, k, s, p, d
    return x.reshape(shape[:2] + (1,) + shape[2:]), (1, *k), (1, *s), (0, *p), (1, *d)


def _data(shape, dt):
    if dt is np.int64:
        return RNG.integers(-4, 5, shape).astype(np.int64)  # many ties: the first maximum wins
    x = RNG.standard_normal(shape)
    x[..., ::3] = np.round(x[..., ::3])
    return x.astype(dt)


# ---------------------------------------------------------------------- kernel sources (no GPU)
def test_kernel_sources_check_their_arguments():
    with pytest.raises(TypeError, match="not supported"):
        _pool.pool_source("avg", np.dtype(np.int32), 1)
    with pytest.raises(ValueError, match="outputs per thread"):
        _pool.pool_source("max", np.dtype(np.float32), 0)
    with pytest.raises(ValueError, match="op must be one of"):
        _reduce.reduce_source("argmax", np.dtype(np.float32), np.dtype(np.float32), 4)
    with pytest.raises(TypeError, match="float dtypes"):
        _reduce.reduce_source("sum", np.dtype(np.int32), np.dtype(np.int32), 4)
    with pytest.raises(ValueError, match="elements per thread"):
        _reduce.reduce_source("sum", np.dtype(np.float32), np.dtype(np.float32), 0)


def test_families_are_well_formed():
    assert _pool.POOL.reference == "windows" and _pool.POOL.default != "windows"
    assert {c.name for c in _pool.POOL.candidates} >= {"b128p1", "b256p2", "b512p4"}
    assert _reduce.REDUCE.reference == "cupy" and _reduce.REDUCE.default.startswith("tree")
    assert not _reduce.should_tune_reduce(64, 1024) and _reduce.should_tune_reduce(4096, 16384)


# ---------------------------------------------------------------------- pools on the GPU
@pytest.mark.gpu
@pytest.mark.parametrize("dt", [np.float32, np.float16, np.float64, np.int64], ids=lambda d: d.__name__)
@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_pool_candidates_match_numpy(raw, ref, case, dt):
    shape, k, s, p, d, ceil = case
    x = _data(shape, dt)
    want_v, want_i = (ref.to_numpy(t) for t in ref.max_pool(ref.from_numpy(x, BURN[dt]), k, s, p, d, ceil))
    gx = raw.from_numpy(x, BURN[dt])
    lx, lk, ls, lp, ld = _lift(gx, case)
    for cand in _pool.POOL.candidates:
        values, index = cand.fn(raw, "max", lx, lk, ls, lp, ld, ceil, False)
        np.testing.assert_array_equal(raw.to_numpy(values).reshape(want_v.shape), want_v, err_msg=cand.name)
        np.testing.assert_array_equal(raw.to_numpy(index).reshape(want_i.shape), want_i, err_msg=cand.name)
    if dt is np.int64:
        return
    ones = (1,) * len(lk)
    for cip in (False, True):
        want = ref.to_numpy(ref.avg_pool(ref.from_numpy(x, BURN[dt]), k, s, p, cip, ceil)).astype(np.float64)
        # float32: summation order only; float16: the numpy backend sums in float16, the kernels in float
        tol = 2e-3 if dt is np.float16 else 1e-6
        for cand in _pool.POOL.candidates:
            got = raw.to_numpy(cand.fn(raw, "avg", lx, lk, ls, lp, ones, ceil, cip)).reshape(want.shape)
            np.testing.assert_allclose(
                got.astype(np.float64), want, rtol=tol, atol=4 * tol, err_msg=cand.name
            )


@pytest.mark.gpu
def test_max_pool_nan_takes_the_first_nan(raw, ref):
    x = RNG.standard_normal((1, 2, 6, 7)).astype(np.float32)
    x[0, 0, 1, 2] = x[0, 0, 2, 1] = x[0, 1, 4, 4] = np.nan
    args = ((3, 3), (2, 2), (1, 1), (1, 1), True)
    want_v, want_i = (ref.to_numpy(t) for t in ref.max_pool(ref.from_numpy(x, burn.float32), *args))
    for cand in _pool.POOL.candidates:
        values, index = cand.fn(raw, "max", raw.from_numpy(x, burn.float32), *args, False)
        np.testing.assert_array_equal(raw.to_numpy(values), want_v, err_msg=cand.name)
        np.testing.assert_array_equal(raw.to_numpy(index), want_i, err_msg=cand.name)


@pytest.mark.gpu
@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_backend_pools_and_bfloat16(raw, ref, case):
    """The backend methods (the default direct kernel, strided input), and bfloat16 through float32."""
    shape, k, s, p, d, ceil = case
    b = raw
    xs = check_strided_pools(
        b, ref, RNG.standard_normal(shape[:-1] + (2 * shape[-1],)).astype(np.float32), case
    )
    if burn.bfloat16 not in b.dtypes:
        return
    xb = b.from_numpy(xs, burn.bfloat16)
    exact = b.to_numpy(xb).astype(np.float32)  # the values bfloat16 holds
    want_v, want_i = (
        ref.to_numpy(t) for t in ref.max_pool(ref.from_numpy(exact, burn.float32), k, s, p, d, ceil)
    )
    values, index = b.max_pool(xb, k, s, p, d, ceil)
    np.testing.assert_array_equal(b.to_numpy(values).astype(np.float32), want_v)
    np.testing.assert_array_equal(b.to_numpy(index), want_i)


# ---------------------------------------------------------------------- reductions on the GPU
_NUMPY = {"sum": np.sum, "mean": np.mean, "prod": np.prod, "max": np.max, "min": np.min}


@pytest.mark.gpu
@pytest.mark.parametrize("dt", [np.float32, np.float16, np.float64], ids=lambda d: d.__name__)
@pytest.mark.parametrize(
    "rows,n", [(3, 5000), (1, 1 << 20), (700, 4099), (2048, 64)]
)  # few rows: chunks and a second pass; many rows: one pass
def test_reduce_candidates_match_numpy(raw, dt, rows, n):
    x = RNG.standard_normal((rows, n)).astype(dt)
    x[0, 7] = 40.0  # a clear maximum
    gx = raw.from_numpy(x, BURN[dt])
    for op in _reduce.REDUCE_OPS:
        data, g = x, gx
        if op == "prod":  # signs, eight 2s and four halves: an exact product (16 or -16) in every order
            data = np.where(x < 0, -1.0, 1.0).astype(dt)
            data[:, :8], data[:, 8:12] = 2.0, 0.5
            g = raw.from_numpy(data, BURN[dt])
        want = _NUMPY[op](data.astype(np.float64), axis=1)
        rtol, atol = (5e-3, 0.5) if dt is np.float16 else (1e-5, 1e-3)
        for cand in _reduce.REDUCE.candidates:
            got = raw.to_numpy(cand.fn(raw, op, g, rows, n))
            assert got.shape == (rows,) and got.dtype == dt, (cand.name, got.shape, got.dtype)
            np.testing.assert_allclose(
                got.astype(np.float64), want, rtol=rtol, atol=atol, err_msg=f"{op} {cand.name}"
            )


@pytest.mark.gpu
def test_reduce_nan_propagates(raw):
    x = RNG.standard_normal((2, 9000)).astype(np.float32)
    x[1, 5000] = np.nan
    gx = raw.from_numpy(x, burn.float32)
    for cand in _reduce.REDUCE.candidates:
        for op in ("max", "min", "sum"):
            got = raw.to_numpy(cand.fn(raw, op, gx, 2, 9000))
            assert np.isfinite(got[0]) and np.isnan(got[1]), (cand.name, op, got)


@pytest.mark.gpu
def test_backend_reduce_routes_trailing_dims(cuda):
    """Large trailing-dim reductions take the tuned family; others (leading dims, small) CuPy's."""
    b = getattr(cuda.backend, "inner", cuda.backend)
    x = RNG.standard_normal((8, 1024, 1024)).astype(np.float32)
    g = b.from_numpy(x, burn.float32)
    x64 = x.astype(np.float64)
    for dims, keep in (((2,), False), ((1, 2), True), ((0, 1, 2), False), ((0,), False), ((1,), True)):
        for op in ("sum", "mean", "max"):
            got = b.to_numpy(b.reduce(op, g, dims, keep))
            want = _NUMPY[op](x64, axis=dims, keepdims=keep)
            np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-2, err_msg=f"{op} {dims}")


# ---------------------------------------------------------------------- tuning end to end
def _fresh(monkeypatch, tmp_path):
    from burn_cuda._backend import CudaBackend

    monkeypatch.setenv("BURN_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("BURN_AUTOTUNE_BLOCKING", "1")  # tests the tuning run, made at once
    monkeypatch.setenv("BURN_AUTOTUNE", "full")
    backend = CudaBackend(0)
    backend.device = "cuda:test"
    return backend


@pytest.mark.gpu
def test_pool_and_reduce_tune_and_cache(cuda, ref, tmp_path, monkeypatch):
    from burn import autotune

    seen: list[autotune.AutotuneEvent] = []
    unsubscribe = autotune.subscribe(seen.append)
    try:
        b = _fresh(monkeypatch, tmp_path)
        x = RNG.standard_normal((4, 8, 128, 128)).astype(np.float32)  # 4.7M outputs x taps: tuned
        args = ((3, 3), (1, 1), (1, 1), (1, 1), False)
        values, index = b.max_pool(b.from_numpy(x, burn.float32), *args)
        want_v, want_i = (ref.to_numpy(t) for t in ref.max_pool(ref.from_numpy(x, burn.float32), *args))
        np.testing.assert_array_equal(b.to_numpy(values), want_v)
        np.testing.assert_array_equal(b.to_numpy(index), want_i)
        r = RNG.standard_normal((64, 65536)).astype(np.float32)
        got = b.to_numpy(b.reduce("sum", b.from_numpy(r, burn.float32), (1,), False))
        np.testing.assert_allclose(got, r.astype(np.float64).sum(1), rtol=1e-4, atol=1e-2)
        keys = {
            "pool": "max float32 nc32 h128 w128 k3x3 s1x1 p1x1 d1x1",
            "reduce": "sum float32 r64 n65536",
        }
        for family, key in keys.items():
            entry = b._autotuner.cache.get(f"{family}|{key}")
            assert entry is not None and entry["dropped"] == {}, (family, entry)
            fam = _pool.POOL if family == "pool" else _reduce.REDUCE
            assert set(entry["seconds"]) == {c.name for c in fam.candidates}
            done = [e for e in seen if e.kind == "autotune" and e.done and e.key == key]
            assert len(done) == 1 and done[0].best == entry["best"]
        seen.clear()
        again = _fresh(monkeypatch, tmp_path)  # another process's view: the cache answers
        values, index = again.max_pool(again.from_numpy(x, burn.float32), *args)
        np.testing.assert_array_equal(again.to_numpy(index), want_i)
        again.reduce("sum", again.from_numpy(r, burn.float32), (1,), False)
        assert sorted(e.kind for e in seen if e.key in keys.values()) == ["cache", "cache"]
    finally:
        unsubscribe()


@pytest.mark.parametrize(
    "shape,dims",
    [
        ((4096, 768), (0,)),  # a bias gradient: column sums
        ((32, 64, 28, 28), (0, 2, 3)),  # a BatchNorm's statistics: trailing run, then the batch
        ((16, 96, 40), (0, 1)),
        ((6, 50, 120), (1,)),  # a middle dim
        ((16, 24, 10, 12), (1, 2)),
    ],
)
@pytest.mark.parametrize("op", ["sum", "mean"])
@pytest.mark.parametrize("dtype", [np.float32, np.float16])
@pytest.mark.parametrize("keepdim", [False, True])
def test_reductions_over_leading_dims_by_column_sums(raw, ref, shape, dims, op, dtype, keepdim):
    """sum/mean over dims that are not all trailing go through ``reduce_columns`` (trailing run by
    the tree kernels, the rest by the column-sum kernel) and equal the numpy backend."""
    x = RNG.standard_normal(shape).astype(dtype)
    assert _reduce.reduce_columns(raw, op, raw.from_numpy(x, BURN[dtype]), dims, keepdim) is not None
    got = raw.to_numpy(raw.reduce(op, raw.from_numpy(x, BURN[dtype]), dims, keepdim))
    want = ref.to_numpy(ref.reduce(op, ref.from_numpy(x.astype(np.float64), burn.float64), dims, keepdim))
    assert got.dtype == dtype and got.shape == want.shape
    scale = np.abs(x.astype(np.float64)).sum(axis=dims, keepdims=keepdim)
    if op == "mean":
        scale = scale / np.prod([shape[d] for d in dims])
    tol = 1e-5 if dtype == np.float32 else 2e-3
    assert np.all(np.abs(got.astype(np.float64) - want) <= tol * scale + tol)


def test_column_sums_ignore_the_matmul_precision(raw, ref):
    """A column sum stays exact fp32 under TF32 matmul precision (no GEMM is involved)."""
    import burn_cuda

    x = (RNG.standard_normal((2048, 512)) + 100.0).astype(np.float32)  # TF32 would lose ~3 digits
    want = x.astype(np.float64).sum(axis=0)
    with burn_cuda.matmul_precision("tf32"):
        got = raw.to_numpy(raw.reduce("sum", raw.from_numpy(x, burn.float32), (0,), False))
    assert np.max(np.abs(got - want) / np.abs(want)) < 1e-5


@pytest.mark.parametrize(
    "shape",
    [(4096, 768), (4096, 3072), (1, 5), (7, 33), (300, 1), (3, 1000, 70), (64, 9, 2), (100000, 3)],
)
@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_column_sums_kernel(raw, shape, dtype):
    """``_colsum.column_sums`` against float64 numpy: one block per column tile and row splits with a
    second pass (``splits_for``), odd widths, a single row or column, a leading batch dim; the same
    result twice (a fixed summation order)."""
    from burn_cuda import _colsum

    x = RNG.standard_normal(shape).astype(dtype)
    dx = raw.from_numpy(x, BURN[dtype])
    got = raw.to_numpy(_colsum.column_sums(raw.xp, dx, 0.5))
    want = 0.5 * x.astype(np.float64).sum(axis=-2)
    assert got.dtype == dtype and got.shape == want.shape
    scale = 0.5 * np.abs(x.astype(np.float64)).sum(axis=-2)
    tol = {np.float16: 2e-3, np.float32: 1e-5, np.float64: 1e-12}[dtype]
    assert np.all(np.abs(got.astype(np.float64) - want) <= tol * scale + tol)
    again = raw.to_numpy(_colsum.column_sums(raw.xp, dx, 0.5))
    assert np.array_equal(got.view(np.uint8), again.view(np.uint8))


def test_column_sums_rejects_bad_input(raw):
    from burn_cuda import _colsum

    with pytest.raises(TypeError, match="float16, float32 or float64"):
        _colsum.column_sums(raw.xp, raw.xp.zeros((4, 4), dtype=np.int32))
    with pytest.raises(ValueError, match="C-contiguous 2-d or 3-d"):
        _colsum.column_sums(raw.xp, raw.xp.zeros((4, 4), dtype=np.float32).T)
