"""The tuned long-row reduction family: every (workgroup size, elements per invocation) candidate
against numpy for each op (one and two passes, float16 partials in f32), and one tuning run over a
reduction large enough to be tuned."""

from __future__ import annotations

import warnings

import burn
import numpy as np
import pytest
from burn_wgpu import _reduce
from burn_wgpu._kernels import reduce as KR

NUMPY = {"sum": np.sum, "prod": np.prod, "max": np.max, "min": np.min, "all": np.all, "any": np.any}


@pytest.mark.parametrize("name", [c.name for c in _reduce.REDUCE.candidates])
@pytest.mark.parametrize("rows,n", [(3, 1000), (2, 70000)])  # one pass for most, two for the long rows
def test_candidates_match_numpy(backend, rng, name, rows, n):
    fn = _reduce.REDUCE.by_name[name].fn
    x = rng.standard_normal((rows, n)).astype(np.float32)
    px = backend.from_numpy(x, burn.float32)
    for op in ("sum", "max", "min"):
        got = backend.to_numpy(fn(backend, op, px, rows, n, burn.float32))
        np.testing.assert_allclose(got, NUMPY[op](x, axis=1), rtol=1e-4, atol=1e-3, err_msg=op)
    p = (1 + 1e-5 * x).astype(np.float32)
    got = backend.to_numpy(fn(backend, "prod", backend.from_numpy(p, burn.float32), rows, n, burn.float32))
    np.testing.assert_allclose(got, np.prod(p.astype(np.float64), axis=1), rtol=1e-3)
    b = x > -3.0
    pb = backend.from_numpy(b, burn.bool)
    for op in ("all", "any"):
        got = backend.to_numpy(fn(backend, op, pb, rows, n, burn.bool))
        np.testing.assert_array_equal(got.astype(bool), NUMPY[op](b, axis=1), err_msg=op)


def test_float16_partials(backend, rng):
    if burn.float16 not in backend.dtypes:
        pytest.skip("the adapter has no shader-f16")
    x = rng.standard_normal((2, 9000)).astype(np.float16)
    px = backend.from_numpy(x, burn.float16)
    got = backend.to_numpy(_reduce.reduce_rows(backend, "sum", px, 2, 9000, burn.float16, 64, 4))
    assert got.dtype == np.float16
    np.testing.assert_allclose(got.astype(np.float64), x.astype(np.float64).sum(1), rtol=1e-2, atol=0.5)


def test_bad_workgroup_size():
    with pytest.raises(ValueError, match="power of two"):
        KR.render("sum", burn.float32, burn.float32, False, 96)


@pytest.mark.slow
def test_large_reduction_tunes(tmp_path, monkeypatch, rng):
    monkeypatch.setenv("BURN_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("BURN_AUTOTUNE_BLOCKING", "1")  # tests the tuning run, made at once
    monkeypatch.setenv("BURN_AUTOTUNE", "full")
    from burn_wgpu._backend import WgpuBackend

    backend = WgpuBackend(0)
    backend.device = "wgpu:test"
    x = rng.standard_normal((4, 1 << 20)).astype(np.float32)
    px = backend.from_numpy(x, burn.float32)
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        got = backend.to_numpy(backend.reduce("sum", px, (1,), False))
    np.testing.assert_allclose(got, x.astype(np.float64).sum(1), rtol=1e-4, atol=1e-2)
    entry = backend._autotuner.cache.get("reduce|sum float32->float32 r4 n1048576")
    assert entry is not None and entry["dropped"] == {}, entry
    assert set(entry["seconds"]) == {c.name for c in _reduce.REDUCE.candidates}
    assert not [w for w in seen if issubclass(w.category, RuntimeWarning)]
    # the mean divides the tuned sum (and reuses the tuning: same key)
    np.testing.assert_allclose(
        backend.to_numpy(backend.reduce("mean", px, (1,), False)), x.mean(1), rtol=1e-4, atol=1e-5
    )
