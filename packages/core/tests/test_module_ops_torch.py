"""Optional extra coverage: the module ops against PyTorch (skipped where torch is not installed; the
main reference is the plain-loop numpy code in test_module_ops.py). Runs a seeded sweep of random
configs on the numpy backend and on a core-only backend (defaults), float64, tolerance 1e-10."""

from __future__ import annotations

import numpy as np
import pytest
from burn.nn import functional as F
from burn_core_tests._module_ref import BACKENDS, as_tensor

torch = pytest.importorskip("torch")
TF = torch.nn.functional


def _check(got, want):
    want = want.detach().numpy()
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-10, atol=1e-10)


SEEDS = range(6)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("seed", SEEDS)
def test_conv_and_transpose_sweep(seed, backend):
    rng = np.random.default_rng(seed)
    groups = int(rng.choice([1, 2]))
    c_in, c_out = 2 * groups, 3 * groups
    k = tuple(int(v) for v in rng.integers(1, 4, 2))
    s = tuple(int(v) for v in rng.integers(1, 4, 2))
    d = tuple(int(v) for v in rng.integers(1, 3, 2))
    p = tuple(int(v) for v in rng.integers(0, 3, 2))
    x = rng.standard_normal((2, c_in, 9, 8))
    w, b = rng.standard_normal((c_out, c_in // groups) + k), rng.standard_normal(c_out)
    got = F.conv2d(as_tensor(x, backend), as_tensor(w, backend), as_tensor(b, backend), s, p, d, groups)
    _check(got, TF.conv2d(torch.tensor(x), torch.tensor(w), torch.tensor(b), s, p, d, groups))
    op = tuple(int(rng.integers(0, max(si, di))) for si, di in zip(s, d))
    wt = rng.standard_normal((c_in, c_out // groups) + k)
    got = F.conv_transpose2d(
        as_tensor(x, backend), as_tensor(wt, backend), as_tensor(b, backend), s, p, op, groups, d
    )
    _check(got, TF.conv_transpose2d(torch.tensor(x), torch.tensor(wt), torch.tensor(b), s, p, op, groups, d))


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("seed", SEEDS)
def test_pool_sweep(seed, backend):
    rng = np.random.default_rng(100 + seed)
    k = tuple(int(v) for v in rng.integers(1, 4, 2))
    s = tuple(int(v) for v in rng.integers(1, 4, 2))
    p = tuple(int(rng.integers(0, ki // 2 + 1)) for ki in k)
    d = tuple(int(v) for v in rng.integers(1, 3, 2))
    ceil = bool(rng.integers(0, 2))
    x = rng.integers(-3, 4, (2, 3, 9, 10)).astype(np.float64)  # ties
    v, i = F.max_pool2d(as_tensor(x, backend), k, s, p, d, ceil, return_indices=True)
    tv, ti = TF.max_pool2d(torch.tensor(x), k, s, p, d, ceil, return_indices=True)
    _check(v, tv)
    np.testing.assert_array_equal(i.numpy(), ti.numpy())
    for cip in (True, False):
        got = F.avg_pool2d(as_tensor(x, backend), k, s, p, ceil, cip)
        _check(got, TF.avg_pool2d(torch.tensor(x), k, s, p, ceil, cip))
    out = tuple(int(v) for v in rng.integers(1, 12, 2))
    _check(F.adaptive_avg_pool2d(as_tensor(x, backend), out), TF.adaptive_avg_pool2d(torch.tensor(x), out))
    v, i = F.adaptive_max_pool2d(as_tensor(x, backend), out, return_indices=True)
    tv, ti = TF.adaptive_max_pool2d(torch.tensor(x), out, return_indices=True)
    _check(v, tv)
    np.testing.assert_array_equal(i.numpy(), ti.numpy())


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize(
    "mode,align",
    [("nearest", None), ("bilinear", False), ("bilinear", True), ("bicubic", False), ("bicubic", True)],
)
def test_interpolate_sweep(mode, align, backend):
    rng = np.random.default_rng(7)
    x = rng.standard_normal((2, 2, 6, 7))
    for size in [(1, 1), (2, 3), (6, 7), (11, 4), (13, 15)]:
        got = F.interpolate(as_tensor(x, backend), size=size, mode=mode, align_corners=align)
        _check(got, TF.interpolate(torch.tensor(x), size=size, mode=mode, align_corners=align))
    for scale in [2, (1.5, 0.5)]:
        got = F.interpolate(as_tensor(x, backend), scale_factor=scale, mode=mode, align_corners=align)
        want = TF.interpolate(
            torch.tensor(x), scale_factor=scale, mode=mode, align_corners=align, recompute_scale_factor=True
        )
        _check(got, want)


@pytest.mark.parametrize("backend", BACKENDS)
def test_unfold_1d_ops_and_embedding(backend):
    rng = np.random.default_rng(9)
    x = rng.standard_normal((2, 3, 7, 8))
    got = F.unfold4d(as_tensor(x, backend), (3, 2), stride=(2, 1), padding=(1, 1), dilation=(1, 2))
    _check(got, TF.unfold(torch.tensor(x), (3, 2), dilation=(1, 2), padding=(1, 1), stride=(2, 1)))
    x1, w1 = rng.standard_normal((2, 4, 11)), rng.standard_normal((6, 2, 3))
    _check(
        F.conv1d(as_tensor(x1, backend), as_tensor(w1, backend), None, 2, 1, 2, 2),
        TF.conv1d(torch.tensor(x1), torch.tensor(w1), None, 2, 1, 2, 2),
    )
    v, i = F.max_pool1d(as_tensor(x1, backend), 3, 2, 1, 2, True, return_indices=True)
    tv, ti = TF.max_pool1d(torch.tensor(x1), 3, 2, 1, 2, True, return_indices=True)
    _check(v, tv)
    np.testing.assert_array_equal(i.numpy(), ti.numpy())
    _check(
        F.interpolate(as_tensor(x1, backend), size=17, mode="linear", align_corners=True),
        TF.interpolate(torch.tensor(x1), size=17, mode="linear", align_corners=True),
    )
    w = rng.standard_normal((5, 3))
    idx = rng.integers(0, 5, (2, 4))
    _check(
        F.embedding(as_tensor(idx, backend), as_tensor(w, backend)),
        TF.embedding(torch.tensor(idx), torch.tensor(w)),
    )
