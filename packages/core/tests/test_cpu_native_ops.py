"""The plain cpu device's compiled kernels (``burn._native._ops*``): grouped/depthwise conv, max and avg
pools, the max pool's backward scatter, softmax/log-softmax and layer-norm rows.

- each kernel (forced past its size threshold; a grouped conv's input and weight gradients too) over random shapes, strides, padding, dilation and
  groups, float32 and float64, against a float64 numpy reference (conv, softmax, layer norm: within
  float32 rounding) or against the numpy path itself (pools, scatter: exactly, NaN and inf included);
- the backend's dispatch: with every threshold at 0 the numpy backend's ops (and a training step
  through autodiff) give what they give on numpy alone;
- numpy alone where there is no compiler (``BURN_CPU_NATIVE=0``, ``CC`` not a compiler) or a build fails.

The compiling tests skip where no C compiler works; the fallback tests run everywhere.
"""

from __future__ import annotations

import functools
import math
import warnings
from typing import Any

import burn
import numpy as np
import pytest
from burn import _native
from burn._native import _ops, _ops_conv, _ops_conv_grad, _ops_pool, _ops_rows
from burn.backend import conv_transpose_out_sizes

TC = _native.toolchain()
needs_cc = pytest.mark.skipif(not TC.available, reason=f"no working C compiler: {TC.reason}")
B = burn.device("cpu").backend
DTYPES = (np.float32, np.float64)
RTOL = {np.float32: 2e-5, np.float64: 1e-12}


def _ref_conv(x: Any, w: Any, b: Any, stride: Any, pad: Any, dil: Any, groups: int) -> np.ndarray:
    """A float64 2-d conv by kernel taps (an einsum per tap and group)."""
    x, w = x.astype(np.float64), w.astype(np.float64)
    n, c, h, wd = x.shape
    co, cg, kh, kw = w.shape
    oh = (h + 2 * pad[0] - dil[0] * (kh - 1) - 1) // stride[0] + 1
    ow = (wd + 2 * pad[1] - dil[1] * (kw - 1) - 1) // stride[1] + 1
    xp = np.pad(x, ((0, 0), (0, 0), (pad[0], pad[0]), (pad[1], pad[1])))
    y = np.zeros((n, co, oh, ow))
    cog = co // groups
    for g in range(groups):
        for i in range(kh):
            for j in range(kw):
                win = xp[
                    :,
                    g * cg : (g + 1) * cg,
                    i * dil[0] : i * dil[0] + (oh - 1) * stride[0] + 1 : stride[0],
                    j * dil[1] : j * dil[1] + (ow - 1) * stride[1] + 1 : stride[1],
                ]
                y[:, g * cog : (g + 1) * cog] += np.einsum(
                    "nchw,oc->nohw", win, w[g * cog : (g + 1) * cog, :, i, j]
                )
    if b is not None:
        y += b.astype(np.float64)[None, :, None, None]
    return y


def _conv_cases(rng: np.random.Generator, count: int) -> list[tuple[Any, ...]]:
    cases = []
    for _ in range(count):
        groups = int(rng.choice([1, 2, 3, 4, 8]))
        depthwise = rng.random() < 0.4
        c = groups * (1 if depthwise else int(rng.integers(1, 4)))
        co = groups * int(rng.choice([1, 2, 3, 8, 9]))  # below and above the blocked kernel's 8
        k = (int(rng.integers(1, 6)), int(rng.integers(1, 6)))
        stride = (int(rng.integers(1, 4)), int(rng.integers(1, 4)))
        dil = (int(rng.integers(1, 3)), int(rng.integers(1, 3)))
        pad = (int(rng.integers(0, 3)), int(rng.integers(0, 3)))
        h = dil[0] * (k[0] - 1) + 1 + int(rng.integers(0, 12))
        w = dil[1] * (k[1] - 1) + 1 + int(rng.integers(0, 20))
        cases.append(((int(rng.integers(1, 3)), c, h, w), (co, c // groups, *k), stride, pad, dil, groups))
    return cases


@needs_cc
@pytest.mark.parametrize("dtype", DTYPES)
def test_conv2d_matches_float64_reference(dtype: Any) -> None:
    rng = np.random.default_rng(1)
    for xs, ws, stride, pad, dil, groups in _conv_cases(rng, 40):
        x = rng.standard_normal(xs).astype(dtype)
        w = rng.standard_normal(ws).astype(dtype)
        b = rng.standard_normal(ws[0]).astype(dtype) if rng.random() < 0.7 else None
        y = _ops_conv.conv2d(x, w, b, stride, pad, dil, groups, force=True)
        assert y is not None and y.dtype == dtype
        ref = _ref_conv(x, w, b, stride, pad, dil, groups)
        scale = np.abs(x).max() * np.abs(w).max() * ws[1] * ws[2] * ws[3] + 1
        np.testing.assert_allclose(y, ref, rtol=0, atol=RTOL[dtype] * scale, err_msg=str((xs, ws, stride)))


@needs_cc
def test_conv2d_strided_input_and_nonfinite() -> None:
    rng = np.random.default_rng(2)
    x = rng.standard_normal((2, 16, 20, 20)).astype(np.float32)[:, ::2, ::-1]  # a strided, reversed view
    x[0, 1, 3, 4], x[1, 2, 5, 5] = np.nan, np.inf
    w = rng.standard_normal((16, 1, 3, 3)).astype(np.float32)
    y = _ops_conv.conv2d(x, w, None, (1, 1), (1, 1), (1, 1), 8, force=True)
    ref = _ref_conv(x, w, None, (1, 1), (1, 1), (1, 1), 8)
    assert y is not None
    np.testing.assert_array_equal(np.isnan(y), np.isnan(ref))
    np.testing.assert_array_equal(np.isinf(y), np.isinf(ref))
    fin = np.isfinite(ref)
    np.testing.assert_allclose(y[fin], ref[fin], rtol=1e-5, atol=1e-4)


@needs_cc
@pytest.mark.parametrize("dtype", DTYPES)
def test_conv_backward_matches_the_float64_numpy_path(dtype: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """conv_transpose (the input gradient) and conv_weight_grad of grouped convs against the numpy
    path run in float64 (im2col and matmuls, with the native kernels off)."""
    rng = np.random.default_rng(11)
    for xs, ws, stride, pad, dil, groups in _conv_cases(rng, 25):
        if groups == 1:
            continue
        x = rng.standard_normal(xs).astype(dtype)
        w = rng.standard_normal(ws).astype(dtype)
        y = _ref_conv(x, w, None, stride, pad, dil, groups)
        g = rng.standard_normal(y.shape).astype(dtype)
        grown = conv_transpose_out_sizes(y.shape[2:], ws[2:], stride, pad, (0, 0), dil)
        out_pad = tuple(a - b for a, b in zip(xs[2:], grown))
        x64, w64, g64 = x.astype(np.float64), w.astype(np.float64), g.astype(np.float64)

        def reference() -> tuple[Any, Any]:
            gx = B.conv_transpose(g64, w64, None, stride, pad, out_pad, dil, groups)  # noqa: B023
            return gx, B.conv_weight_grad(x64, g64, ws, stride, pad, dil, groups)  # noqa: B023

        gx_ref, gw_ref = _without_native(monkeypatch, reference)
        gx = _ops_conv_grad.conv_transpose2d(g, w, None, stride, pad, out_pad, dil, groups, force=True)
        gw = _ops_conv_grad.conv_weight_grad2d(x, g, ws, stride, pad, dil, groups, force=True)
        assert gx is not None and gw is not None and gx.shape == xs and gw.shape == ws
        scale_x = np.abs(g).max() * np.abs(w).max() * math.prod(ws[1:]) * ws[0] + 1
        scale_w = np.abs(g).max() * np.abs(x).max() * math.prod(y.shape) / ws[0] + 1
        np.testing.assert_allclose(gx, gx_ref, rtol=0, atol=RTOL[dtype] * scale_x)
        np.testing.assert_allclose(gw, gw_ref, rtol=0, atol=RTOL[dtype] * scale_w)


def _without_native(monkeypatch: pytest.MonkeyPatch, fn: Any) -> Any:
    with monkeypatch.context() as m:
        m.setenv("BURN_CPU_NATIVE", "0")
        return fn()


@needs_cc
@pytest.mark.parametrize("dtype", DTYPES)
def test_pools_equal_the_numpy_path(dtype: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(3)
    for _ in range(30):
        k = (int(rng.integers(1, 5)), int(rng.integers(1, 5)))
        stride = (int(rng.integers(1, 4)), int(rng.integers(1, 4)))
        pad = (int(rng.integers(0, k[0] // 2 + 1)), int(rng.integers(0, k[1] // 2 + 1)))
        dil = (int(rng.integers(1, 3)), int(rng.integers(1, 3)))
        ceil = bool(rng.random() < 0.5)
        shape = (
            2,
            3,
            dil[0] * (k[0] - 1) + 1 + int(rng.integers(0, 9)),
            dil[1] * (k[1] - 1) + 1 + int(rng.integers(0, 9)),
        )
        x = rng.standard_normal(shape).astype(dtype)
        x.flat[rng.integers(0, x.size, 4)] = rng.choice([np.nan, np.inf, -np.inf], 4)
        x.flat[rng.integers(0, x.size, 6)] = 0.5  # ties: the first maximum wins
        got = _ops_pool.max_pool2d(x, k, stride, pad, dil, ceil, force=True)
        want = _without_native(monkeypatch, functools.partial(B.max_pool, x, k, stride, pad, dil, ceil))
        assert got is not None
        np.testing.assert_array_equal(got[0], want[0])
        np.testing.assert_array_equal(got[1], want[1])
        incl = bool(rng.random() < 0.5)
        avg = _ops_pool.avg_pool2d(x, k, stride, pad, incl, ceil, force=True)
        want_avg = _without_native(monkeypatch, functools.partial(B.avg_pool, x, k, stride, pad, incl, ceil))
        np.testing.assert_array_equal(avg, want_avg)


@needs_cc
def test_scatter_rows_matches_numpy(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(4)
    x = rng.standard_normal((3, 4, 50)).astype(np.float32)
    index = rng.integers(0, 50, (3, 4, 70))
    src = rng.standard_normal((3, 4, 70)).astype(np.float32)
    got = _ops_pool.scatter_add_rows(x, index, src, force=True)
    want = _without_native(monkeypatch, lambda: B.scatter_add(x, 2, index, src))
    ref = x.astype(np.float64)
    np.add.at(ref, (*np.indices(index.shape, sparse=True)[:2], index), src.astype(np.float64))
    assert got is not None
    np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    assert _ops_pool.scatter_add_rows(x, index[:, :2], src[:, :2], force=True) is None  # other shapes: numpy


@needs_cc
@pytest.mark.parametrize("bad", [-1, 50, 2**40])
def test_scatter_rows_hands_an_out_of_range_index_to_numpy(bad: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """The kernel checks each index as it adds: one outside [0, M) makes it decline, and the backend's
    scatter_add then does what numpy's path does (a negative index wraps, a too-large one raises)."""
    rng = np.random.default_rng(6)
    x = rng.standard_normal((2, 3, 50)).astype(np.float32)
    index = rng.integers(0, 50, (2, 3, 20))
    index[1, 2, 7] = bad
    src = rng.standard_normal((2, 3, 20)).astype(np.float32)
    assert _ops_pool.scatter_add_rows(x, index, src, force=True) is None
    with monkeypatch.context() as m:
        m.setitem(_ops.THRESHOLDS, "scatter_rows", 0)
        if bad < 0:
            want = _without_native(monkeypatch, lambda: B.scatter_add(x, 2, index, src))
            np.testing.assert_array_equal(B.scatter_add(x, 2, index, src), want)
            ref = x.copy()
            np.add.at(ref, (*np.indices(index.shape, sparse=True)[:2], index), src)
            np.testing.assert_allclose(want, ref, rtol=1e-6)
        else:
            with pytest.raises(IndexError):
                B.scatter_add(x, 2, index, src)


@needs_cc
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("log", [False, True])
def test_softmax_rows_match_float64(dtype: Any, log: bool) -> None:
    rng = np.random.default_rng(5)
    for shape in [(1,), (7, 1), (5, 33), (3, 4, 1000), (2, 50257)]:
        x = (rng.standard_normal(shape) * 10).astype(dtype)
        y = _ops_rows.softmax_rows(x, log=log, force=True)
        x64 = x.astype(np.float64)
        s = x64 - x64.max(-1, keepdims=True)
        ref = (
            s - np.log(np.exp(s).sum(-1, keepdims=True))
            if log
            else np.exp(s) / np.exp(s).sum(-1, keepdims=True)
        )
        assert y is not None
        np.testing.assert_allclose(y, ref, rtol=RTOL[dtype] * 10, atol=RTOL[dtype] * (10 if log else 1))
    x = np.array([[1.0, np.nan, 2.0], [1.0, np.inf, 2.0], [-np.inf, 0.0, 1.0]], dtype=dtype)
    y = _ops_rows.softmax_rows(x, log=log, force=True)
    want = B.log_softmax(x, 1) if log else B.softmax(x, 1)
    np.testing.assert_array_equal(np.isnan(y), np.isnan(want))
    np.testing.assert_allclose(y[2], want[2], rtol=1e-6)


@needs_cc
@pytest.mark.parametrize("dtype", DTYPES)
def test_layer_norm_rows_match_float64(dtype: Any) -> None:
    rng = np.random.default_rng(6)
    for shape, affine in [
        ((4, 7), (True, True)),
        ((2, 3, 768), (True, False)),
        ((5, 1), (False, True)),
        ((9, 64), (False, False)),
    ]:
        x = (rng.standard_normal(shape) * 3 + 1).astype(dtype)
        d = shape[-1]
        w = rng.standard_normal(d).astype(dtype) if affine[0] else None
        b = rng.standard_normal(d).astype(dtype) if affine[1] else None
        got = _ops_rows.layer_norm_rows(x, w, b, 1e-5, force=True)
        x64 = x.astype(np.float64)
        mu = x64.mean(-1, keepdims=True)
        rstd = 1 / np.sqrt(((x64 - mu) ** 2).mean(-1, keepdims=True) + 1e-5)
        ref = (x64 - mu) * rstd * (1 if w is None else w) + (0 if b is None else b)
        assert got is not None
        np.testing.assert_allclose(got[0], ref, rtol=RTOL[dtype] * 10, atol=RTOL[dtype] * 10)
        np.testing.assert_allclose(got[1], mu[..., 0], rtol=RTOL[dtype] * 10, atol=RTOL[dtype] * 10)
        np.testing.assert_allclose(got[2], rstd[..., 0], rtol=RTOL[dtype] * 10)


@pytest.fixture
def all_native(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every op of the plain cpu device takes its compiled kernel, whatever its size."""
    monkeypatch.setattr(_ops, "THRESHOLDS", dict.fromkeys(_ops.THRESHOLDS, 0))


def _model_ops(x: Any, w: Any) -> list[np.ndarray]:
    y = B.conv(x, w, None, (1, 1), (1, 1), (1, 1), 4)
    v, i = B.max_pool(y, (2, 2), (2, 2), (0, 0), (1, 1), False)
    return [y, v, i, B.avg_pool(y, (3, 3), (1, 1), (1, 1), True, False), B.softmax(y, 3), B.log_softmax(y, 3)]


@needs_cc
def test_backend_dispatch_gives_the_numpy_results(all_native: None, monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(7)
    x = rng.standard_normal((2, 8, 12, 12)).astype(np.float32)
    w = rng.standard_normal((8, 2, 3, 3)).astype(np.float32)
    native = _model_ops(x, w)
    plain = _without_native(monkeypatch, lambda: _model_ops(x, w))
    for a, b in zip(native, plain):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)


def _train_losses() -> list[float]:
    dev = burn.device("cpu", autodiff=True)
    burn.seed(0)
    rng = np.random.default_rng(8)
    x = burn.from_numpy(rng.standard_normal((4, 6, 10, 10)).astype(np.float32), device=dev)
    w = burn.from_numpy(rng.standard_normal((6, 1, 3, 3)).astype(np.float32) * 0.3, device=dev).require_grad()
    losses = []
    for _ in range(3):
        h = burn.nn.functional.conv2d(x, w, None, 1, 1, 1, 6)
        h = burn.nn.functional.max_pool2d(h, 2, 2)
        loss = burn.nn.functional.log_softmax(h.reshape(4, -1), 1).mean()
        grads = loss.backward()
        step = w.numpy() - 0.1 * w.grad(grads).numpy()
        w = burn.from_numpy(step, device=dev).require_grad()
        losses.append(float(loss.item()))
    return losses


@needs_cc
def test_training_through_native_ops_matches_numpy(all_native: None, monkeypatch: pytest.MonkeyPatch) -> None:
    native = _train_losses()
    plain = _without_native(monkeypatch, _train_losses)
    np.testing.assert_allclose(native, plain, rtol=1e-5)


@pytest.mark.parametrize("how", ["env", "no_compiler"])
def test_numpy_alone_without_a_compiler(how: str, all_native: None, monkeypatch: pytest.MonkeyPatch) -> None:
    if how == "env":
        monkeypatch.setenv("BURN_CPU_NATIVE", "0")
    else:
        monkeypatch.setenv("CC", "/nonexistent/burn-no-cc")
    assert not _ops.enabled()
    x = np.random.default_rng(9).standard_normal((1, 4, 8, 8)).astype(np.float32)
    w = np.ones((4, 1, 3, 3), np.float32)
    assert _ops_conv.conv2d(x, w, None, (1, 1), (1, 1), (1, 1), 4) is None
    assert _ops_pool.max_pool2d(x, (2, 2), (2, 2), (0, 0), (1, 1), False) is None
    assert _ops_rows.softmax_rows(x) is None
    y = B.conv(x, w, None, (1, 1), (1, 1), (1, 1), 4)  # the numpy path answers
    np.testing.assert_allclose(y, _ref_conv(x, w, None, (1, 1), (1, 1), (1, 1), 4), rtol=1e-5, atol=1e-5)
    assert _native.describe()["plain_ops"] == []


@needs_cc
def test_a_failing_build_falls_back_with_one_warning(
    all_native: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken() -> str:
        return "this is not C"

    monkeypatch.setattr(_ops, "_libraries", {})
    monkeypatch.setattr(_ops, "_warned", set())
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        assert _ops.library("broken", broken) is None
        assert _ops.library("broken", broken) is None
    assert len([w for w in seen if "run on numpy" in str(w.message)]) == 1


@needs_cc
def test_against_torch_where_installed() -> None:
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(10)
    x = rng.standard_normal((2, 12, 15, 17)).astype(np.float32)
    w = rng.standard_normal((24, 3, 3, 3)).astype(np.float32)
    y = _ops_conv.conv2d(x, w, None, (2, 1), (1, 2), (1, 2), 4, force=True)
    ref = torch.nn.functional.conv2d(
        torch.from_numpy(x), torch.from_numpy(w), None, (2, 1), (1, 2), (1, 2), 4
    )
    np.testing.assert_allclose(y, ref.numpy(), rtol=1e-4, atol=1e-4)
    v = _ops_pool.max_pool2d(x, (3, 3), (2, 2), (1, 1), (1, 1), True, force=True)
    tv, ti = torch.nn.functional.max_pool2d(torch.from_numpy(x), 3, 2, 1, 1, True, return_indices=True)
    assert v is not None
    np.testing.assert_array_equal(v[0], tv.numpy())
    np.testing.assert_array_equal(v[1], ti.numpy())
