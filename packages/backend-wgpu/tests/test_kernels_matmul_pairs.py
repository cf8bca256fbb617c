"""The k-pair packed float16 matmul candidates (``_h2``, ``_kernels.matmul_pairs.render_pairs``) against
numpy: every candidate on square, odd ragged (K odd), tall/skinny and long-K shapes, broadcast
batches and transposed (strided) operands, in every load mode; their limits in browser-portable mode.

Tolerance: float16 inputs, the reference is numpy's float32 product of the same inputs; a result may
differ by 4 float16 ulps of the largest reference magnitude (f16 partial sums within a K step, one
f16 rounding of the result; the kernels measure at most about 2.5 on lavapipe)."""

from __future__ import annotations

from types import SimpleNamespace

import burn
import numpy as np
import pytest
from burn_wgpu import _matmul
from burn_wgpu._kernels import matmul as KM
from burn_wgpu._kernels import matmul_pairs as KMP
from burn_wgpu_tests.test_kernels_matmul import _upload

PAIRS = [c.name for c in _matmul.MATMUL.candidates if "_h2" in c.name]
ULPS = 4


@pytest.fixture
def f16_backend(backend):
    if burn.float16 not in backend.dtypes:
        pytest.skip("the adapter has no shader-f16")
    return backend


def _check(backend, rng, name, shape_a, shape_b, ta=False, tb=False):
    """Candidate ``name`` on random float16 operands (``ta``/``tb``: stored transposed); returns the
    load modes it ran with."""
    cand = _matmul.MATMUL.by_name[name]
    a = rng.standard_normal(shape_a).astype(np.float16)
    b = rng.standard_normal(shape_b).astype(np.float16)
    pa, pb = _upload(backend, a, ta), _upload(backend, b, tb)
    if not cand.applies(backend, pa, pb):
        pytest.skip(f"{name} does not fit this adapter's limits")
    got = backend.to_numpy(cand.fn(backend, pa, pb))
    want = a.astype(np.float32) @ b.astype(np.float32)
    assert got.dtype == np.float16 and got.shape == want.shape
    ulp = float(np.spacing(np.float16(np.abs(want).max())))
    np.testing.assert_allclose(got.astype(np.float32), want, rtol=0, atol=ULPS * ulp, err_msg=name)
    return _matmul._modes(pa, pb, (), ())


@pytest.mark.parametrize("name", PAIRS)
def test_square(f16_backend, rng, name):
    for n in (64, 128, 256):
        assert _check(f16_backend, rng, name, (n, n), (n, n)) == ("k4", "n4")


@pytest.mark.parametrize("name", PAIRS)
def test_ragged_and_skinny(f16_backend, rng, name):
    _check(f16_backend, rng, name, (37, 29), (29, 53))  # K odd, below one K step, edges everywhere
    _check(f16_backend, rng, name, (33, 71), (71, 35))  # K odd over several K steps
    _check(f16_backend, rng, name, (520, 36), (36, 12))  # tall
    _check(f16_backend, rng, name, (12, 1030), (1030, 20))  # long K, not a multiple of 4
    _check(f16_backend, rng, name, (16, 4096), (4096, 24))  # f16 sums stay per K step: no drift


@pytest.mark.parametrize("name", PAIRS)
def test_batches_broadcast(f16_backend, rng, name):
    assert _check(f16_backend, rng, name, (2, 3, 24, 40), (3, 40, 20)) == ("k4", "n4")
    assert _check(f16_backend, rng, name, (4, 13, 31), (1, 31, 9)) == ("k1", "n1")


@pytest.mark.parametrize(
    "ta,tb,m,k,n,modes",
    [
        (True, False, 40, 24, 36, ("m4", "n4")),
        (False, True, 40, 24, 36, ("k4", "k4")),
        (True, True, 41, 23, 37, ("m1", "k1")),
    ],
)
@pytest.mark.parametrize("name", PAIRS)
def test_transposed(f16_backend, rng, name, ta, tb, m, k, n, modes):
    assert _check(f16_backend, rng, name, (m, k), (k, n), ta, tb) == modes
    _check(f16_backend, rng, name, (2, m, k), (k, n), ta, tb)  # batched and strided


def test_candidates_respect_portable_limits():
    portable = SimpleNamespace(
        ctx=SimpleNamespace(
            limits={"max-compute-workgroup-storage-size": 16384, "max-compute-invocations-per-workgroup": 256}
        )
    )
    a16 = SimpleNamespace(shape=(512, 512), dtype=burn.float16)
    a32 = SimpleNamespace(shape=(512, 512), dtype=burn.float32)
    fits = {name for name in PAIRS if _matmul.MATMUL.by_name[name].applies(portable, a16, a16)}
    # 16 KiB and 256 invocations: all but the 64-K 64x128 tiles (24 KiB)
    assert fits == {name for name in PAIRS if not name.startswith("b64x128k64")}
    assert len(fits) == 3
    assert not any(_matmul.MATMUL.by_name[name].applies(portable, a32, a32) for name in PAIRS)


def test_pairs_kernel_rejects_bad_arguments():
    blk = KM.Block(64, 128, 64, 4, 8)
    with pytest.raises(ValueError, match="float16"):
        KMP.render_pairs(burn.float32, 0, blk)
    with pytest.raises(ValueError, match="layout"):
        KMP.render_pairs(burn.float16, 0, blk, "m8")
    with pytest.raises(ValueError, match="modes"):
        KMP.render_pairs(burn.float16, 0, blk, "m4", "n4")
    with pytest.raises(ValueError, match="k-pair elements"):
        KMP.render_pairs(burn.float16, 0, KM.Block(64, 128, 4, 4, 8), "m4")  # 8 k per element


def test_pairs_take_no_split_k(f16_backend):
    a = f16_backend.from_numpy(np.ones((8, 8), np.float16), burn.float16)
    with pytest.raises(ValueError, match="k-pair"):
        _matmul.matmul_blocked(f16_backend, a, a, _matmul._F16_BLOCK, splits=4, pairs="m4")
