"""burn-cuda's side of compile-ahead planning and its strided element-wise kernels (``_fusion``): a
stream planned the first time starts its kernels compiling on a thread pool and then runs; element-wise
plans over broadcast, transposed and reversed inputs run as RawKernels over element strides. Results
equal the unfused device's (the same CUDA expressions, so within float32 rounding of a contraction)."""

from __future__ import annotations

import burn
import numpy as np
import pytest
from burn.nn import functional as F
from burn.testing._training import fresh_programs, small_training

pytestmark = pytest.mark.gpu

RNG = np.random.default_rng(3)
X = RNG.standard_normal((4, 5, 6)).astype(np.float32)
ROW = RNG.standard_normal((6,)).astype(np.float32)
COL = RNG.standard_normal((4, 1, 1)).astype(np.float32)


@pytest.fixture(autouse=True)
def _opted_in(cuda, monkeypatch):
    """Compile-ahead planning and the strided kernels are opt-in (``BURN_COMPILE_AHEAD=1``)."""
    monkeypatch.setenv("BURN_COMPILE_AHEAD", "1")
    for fusion in (burn.device("cuda:0").backend, burn.device("cuda:0", autodiff=True).backend.inner):
        monkeypatch.setattr(fusion.runtime, "strided", True)


def _chain(x, row, col):
    return burn.where(x > 0, (x * row + col).exp(), F.tanh(x - row))


# (numpy's view, burn's same view built by ops from the data numpy's view starts from)
VIEWS = {
    "dense": (lambda a: a, lambda t: t),
    "permuted": (lambda a: a, lambda t: t.permute(0, 2, 1).flip(2).flip(2).permute(0, 2, 1)),
    "flipped": (lambda a: a[:, ::-1, :], lambda t: t.flip(1)),
    "expanded": (
        lambda a: np.broadcast_to(a[:, :1, :], a.shape),
        lambda t: t.narrow(1, 0, 1).expand(4, 5, 6),
    ),
}


@pytest.mark.parametrize("view", sorted(VIEWS))
def test_strided_element_wise_kernels_equal_numpy(cuda, view):
    dev = burn.device("cuda:0")
    np_view, burn_view = VIEWS[view]
    x = burn_view(burn.tensor(X, device=dev))
    got = _chain(x, burn.tensor(ROW, device=dev), burn.tensor(COL, device=dev)).numpy()
    data = np_view(X)
    want = np.where(data > 0, np.exp(data * ROW + COL), np.tanh(data - ROW))
    np.testing.assert_allclose(got, want, rtol=2e-6, atol=1e-6)


def test_a_first_step_compiles_its_kernels_ahead_and_equals_unfused(cuda, monkeypatch):
    dev = burn.device("cuda:0", autodiff=True)
    fb = dev.backend.inner
    fresh_programs(fb, monkeypatch)
    runtime = fb.runtime
    monkeypatch.setattr(runtime, "_kernels", {})  # every kernel compiled anew
    compiled: list[str] = []
    from burn_cuda import _fusion

    real = _fusion._compile
    monkeypatch.setattr(_fusion, "_compile", lambda k, d: compiled.append(k.name) or real(k, d))
    got, _ = small_training(dev, steps=4, widths=(20, 16, 16, 10))
    plain, _ = small_training(burn.device("cuda:0", autodiff=True, fusion=False), 4, widths=(20, 16, 16, 10))
    np.testing.assert_allclose(got, plain, rtol=1e-5, atol=1e-6)
    assert len(compiled) >= 4, compiled  # the first step's kernels went to the pool
    assert not runtime._pending  # and every one of them was waited for by its run


def test_compile_ahead_off_runs_the_same(cuda, monkeypatch):
    monkeypatch.setenv("BURN_COMPILE_AHEAD", "0")  # the default
    dev = burn.device("cuda:0", autodiff=True)
    fresh_programs(dev.backend.inner, monkeypatch)
    got, _ = small_training(dev, steps=3)
    plain, _ = small_training(burn.device("cuda:0", autodiff=True, fusion=False), steps=3)
    np.testing.assert_allclose(got, plain, rtol=1e-5, atol=1e-6)
