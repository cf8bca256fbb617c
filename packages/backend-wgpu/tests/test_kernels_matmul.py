"""The register-blocked matmul family against numpy: every tile shape, every load mode (vec4 and
scalar, row-major and transposed operands), odd shapes, broadcast batches, sliced (offset) operands,
split-K and the f16-accumulator variant; the candidates' limits in browser-portable mode; and one
tuning run where every applicable candidate passes the check against the reference."""

from __future__ import annotations

import warnings
from types import SimpleNamespace

import burn
import numpy as np
import pytest
from burn_wgpu import _matmul
from burn_wgpu._kernels import matmul as KM


def _upload(backend, x: np.ndarray, transpose: bool):
    """x on the device; ``transpose``: stored as its transpose and viewed back (strided operand)."""
    if not transpose:
        return backend.from_numpy(x, burn.float32 if x.dtype == np.float32 else burn.float16)
    dt = burn.float32 if x.dtype == np.float32 else burn.float16
    stored = backend.from_numpy(np.ascontiguousarray(np.swapaxes(x, -1, -2)), dt)
    nd = x.ndim
    return backend.permute(stored, tuple(range(nd - 2)) + (nd - 1, nd - 2))


def _check(
    backend,
    rng,
    shape_a,
    shape_b,
    ta=False,
    tb=False,
    block=KM.BLOCKS[0],
    splits=1,
    rtol=1e-4,
    prefetch=False,
):
    a = rng.standard_normal(shape_a).astype(np.float32)
    b = rng.standard_normal(shape_b).astype(np.float32)
    pa, pb = _upload(backend, a, ta), _upload(backend, b, tb)
    got = backend.to_numpy(_matmul.matmul_blocked(backend, pa, pb, block, splits=splits, prefetch=prefetch))
    np.testing.assert_allclose(got, a @ b, rtol=rtol, atol=1e-4 * max(1, shape_a[-1]) ** 0.5)
    return _matmul._modes(pa, pb, (), ())


@pytest.mark.parametrize("prefetch", [False, True], ids=["plain", "prefetch"])
@pytest.mark.parametrize("block", KM.BLOCKS, ids=lambda b: b.name)
def test_every_block_odd_shape(backend, rng, block, prefetch):
    _check(backend, rng, (37, 21), (21, 45), block=block, prefetch=prefetch)  # edges everywhere, scalar
    _check(backend, rng, (40, 24), (24, 68), block=block, prefetch=prefetch)  # vec4 loads and stores
    _check(
        backend, rng, (2, 36, 70), (70, 20), tb=True, block=block, prefetch=prefetch
    )  # K not a step multiple


@pytest.mark.parametrize(
    "ta,tb,m,k,n,modes",
    [
        (False, False, 40, 24, 36, ("k4", "n4")),
        (True, False, 40, 24, 36, ("m4", "n4")),
        (False, True, 40, 24, 36, ("k4", "k4")),
        (True, True, 40, 24, 36, ("m4", "k4")),
        (False, False, 41, 23, 37, ("k1", "n1")),
        (True, True, 41, 23, 37, ("m1", "k1")),
        (True, False, 3, 5, 2, ("m1", "n1")),
    ],
)
def test_load_modes_and_transposes(backend, rng, ta, tb, m, k, n, modes):
    assert _check(backend, rng, (m, k), (k, n), ta, tb) == modes
    assert _check(backend, rng, (m, k), (k, n), ta, tb, block=KM.BLOCKS[3], prefetch=True) == modes


def test_batches_broadcast_and_offsets(backend, rng):
    _check(backend, rng, (2, 3, 12, 16), (3, 16, 8))  # broadcast batch dim
    _check(backend, rng, (4, 13, 16), (1, 16, 9), tb=True)
    # an operand that starts mid-buffer (a slice): offset 4 keeps vec4, offset 1 falls back to scalar
    base = rng.standard_normal((9, 16)).astype(np.float32)
    b = rng.standard_normal((16, 12)).astype(np.float32)
    pbase, pb = backend.from_numpy(base, burn.float32), backend.from_numpy(b, burn.float32)
    for start in (1, 4):
        flat = backend.reshape(pbase, (144,))
        pa = backend.reshape(backend.slice(flat, ((start, start + 128, 1),)), (8, 16))
        want = base.reshape(-1)[start : start + 128].reshape(8, 16) @ b
        got = backend.to_numpy(_matmul.matmul_blocked(backend, pa, pb, KM.BLOCKS[0]))
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
        assert _matmul._modes(pa, pb, (), ())[0] == ("k4" if start == 4 else "k1")


@pytest.mark.parametrize("splits", [2, 4, 16])
def test_split_k(backend, rng, splits):
    _check(backend, rng, (20, 300), (300, 24), splits=splits, rtol=1e-3)
    _check(backend, rng, (2, 7, 301), (301, 5), tb=True, splits=splits, rtol=1e-3)


def test_empty_dims(backend, rng):
    for sa, sb in (((5, 0), (0, 3)), ((0, 4), (4, 3))):
        a = np.zeros(sa, np.float32)
        b = np.ones(sb, np.float32)
        pa, pb = backend.from_numpy(a, burn.float32), backend.from_numpy(b, burn.float32)
        for splits in (1, 4):
            got = backend.to_numpy(_matmul.matmul_blocked(backend, pa, pb, KM.BLOCKS[0], splits=splits))
            np.testing.assert_array_equal(got, a @ b)


def test_f16_accumulators(backend, rng):
    if burn.float16 not in backend.dtypes:
        pytest.skip("the adapter has no shader-f16")
    a = rng.standard_normal((33, 64)).astype(np.float16)
    b = rng.standard_normal((64, 20)).astype(np.float16)
    pa, pb = backend.from_numpy(a, burn.float16), backend.from_numpy(b, burn.float16)
    want = a.astype(np.float64) @ b.astype(np.float64)
    for acc16 in (False, True):
        got = backend.to_numpy(_matmul.matmul_blocked(backend, pa, pb, KM.BLOCKS[2], acc16=acc16))
        assert got.dtype == np.float16
        np.testing.assert_allclose(got.astype(np.float64), want, rtol=1e-2, atol=0.05 if acc16 else 0.02)


def test_f16_accumulators_stay_accurate_over_a_long_k(backend, rng):
    """f16 accumulators hold one K step only, so over K = 1024 the result stays within a few float16
    ulps of the exact product (summing all of K in f16 drifts by far more)."""
    if burn.float16 not in backend.dtypes:
        pytest.skip("the adapter has no shader-f16")
    a = rng.standard_normal((64, 1024)).astype(np.float16)
    b = rng.standard_normal((1024, 64)).astype(np.float16)
    pa, pb = backend.from_numpy(a, burn.float16), backend.from_numpy(b, burn.float16)
    want = a.astype(np.float64) @ b.astype(np.float64)
    ulp = float(np.spacing(np.float16(np.abs(want).max())))
    for block, prefetch in ((KM.BLOCKS[2], False), (KM.BLOCKS[2], True), (_matmul._F16_BLOCK, False)):
        got = _matmul.matmul_blocked(backend, pa, pb, block, acc16=True, prefetch=prefetch)
        err = np.abs(backend.to_numpy(got).astype(np.float64) - want).max()
        assert err <= 4 * ulp, (block.name, prefetch, err, ulp)


def test_candidates_respect_portable_limits():
    portable = SimpleNamespace(
        ctx=SimpleNamespace(
            limits={"max-compute-workgroup-storage-size": 16384, "max-compute-invocations-per-workgroup": 256}
        )
    )
    tiny = SimpleNamespace(
        ctx=SimpleNamespace(
            limits={"max-compute-workgroup-storage-size": 8192, "max-compute-invocations-per-workgroup": 128}
        )
    )
    a = SimpleNamespace(shape=(512, 512), dtype=burn.float32)
    for cand in _matmul.MATMUL.candidates:
        if cand.name.startswith("b") and "_h" not in cand.name:
            assert cand.applies(portable, a, a), cand.name  # every fp32 block fits WebGPU's defaults
    fits_tiny = {c.name for c in _matmul.MATMUL.candidates if c.applies and c.applies(tiny, a, a)}
    assert "b128x128k16r8x8" not in fits_tiny and "b64x64k16r4x4" not in fits_tiny  # 256 invocations
    assert "b32x64k16r4x4" in fits_tiny
    assert not any("_h" in name for name in fits_tiny)  # float32 operands: no f16 variant


def test_kernel_rejects_bad_block():
    with pytest.raises(ValueError, match="register-blocked"):
        KM.render_blocked(burn.float32, 0, KM.Block(64, 64, 16, 3, 4))
    with pytest.raises(ValueError, match="modes"):
        KM.render_blocked(burn.float32, 0, KM.BLOCKS[0], "x4")
    with pytest.raises(ValueError, match="prefetch"):
        KM.render_blocked(burn.float32, 0, KM.BLOCKS[0], b_loads=("x",), prefetch=True)
    with pytest.raises(ValueError, match="float16"):
        KM.render_blocked(burn.float32, 0, KM.BLOCKS[0], acc16=True)


@pytest.mark.slow
def test_tuning_checks_every_candidate(tmp_path, monkeypatch, rng):
    """One tuning run of a skinny matmul (split-K applies): every candidate is checked against the
    reference and none is dropped; the result is right."""
    monkeypatch.setenv("BURN_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("BURN_AUTOTUNE_BLOCKING", "1")  # tests the tuning run, made at once
    monkeypatch.setenv("BURN_AUTOTUNE", "full")
    from burn_wgpu._backend import WgpuBackend

    backend = WgpuBackend(0)
    backend.device = "wgpu:test"
    a = rng.standard_normal((64, 2048)).astype(np.float32)
    b = rng.standard_normal((2048, 64)).astype(np.float32)
    pa, pb = backend.from_numpy(a, burn.float32), backend.from_numpy(b, burn.float32)
    assert _matmul.should_tune(pa, pb)
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        got = backend.to_numpy(backend.matmul(pa, pb))
    np.testing.assert_allclose(got, a @ b, rtol=1e-3, atol=1e-3)
    entry = backend._autotuner.cache.get("matmul|float32 m64 n64 k2048 1 nn")
    assert entry is not None and entry["dropped"] == {}, entry
    assert {"splitk4_b64x64k16r4x4", "splitk16_b64x64k16r4x4", "b32x64k16r4x4"} <= set(entry["seconds"])
    assert not [w for w in seen if issubclass(w.category, RuntimeWarning)]


def test_int32_exact(backend, rng):
    """The default candidate also serves int32 (BURN_AUTOTUNE=off/cache-only): exact results."""
    a = rng.integers(-5, 5, (37, 40)).astype(np.int32)
    b = rng.integers(-5, 5, (40, 29)).astype(np.int32)
    pa, pb = backend.from_numpy(a, burn.int32), backend.from_numpy(b, burn.int32)
    for prefetch in (False, True):
        got = backend.to_numpy(_matmul.matmul_blocked(backend, pa, pb, KM.BLOCKS[0], prefetch=prefetch))
        np.testing.assert_array_equal(got, a @ b)
