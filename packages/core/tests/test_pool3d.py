"""3-d max and average pooling (issue 32): ``F.max_pool3d`` / ``F.avg_pool3d`` / adaptive 3-d pools and
the ``nn.MaxPool3d`` / ``nn.AvgPool3d`` modules against a direct numpy loop over every window (PyTorch's
rules for padding, dilation, ceil_mode and count_include_pad), on every available backend; gradients
against finite differences; PyTorch itself where it is installed."""

from __future__ import annotations

import itertools
import math

import burn
import numpy as np
import pytest
from burn import nn
from burn.nn import functional as F

DEVICES = ["cpu"] + [i.name for i in burn.backends() if i.available and i.name in ("wgpu", "cuda")]


def _out_size(n: int, k: int, s: int, p: int, d: int, ceil: bool) -> int:
    span = n + 2 * p - d * (k - 1) - 1
    out = (-(-span // s) if ceil else span // s) + 1
    if ceil and (out - 1) * s >= n + p:  # PyTorch: the last window must start inside the input or left pad
        out -= 1
    return out


def _ref_pool(x, kind, kernel, stride, padding, dilation=(1, 1, 1), ceil=False, include_pad=True):
    """A loop over windows: max (padding never wins) or mean (divisor per count_include_pad)."""
    n, c = x.shape[:2]
    sizes = x.shape[2:]
    outs = [_out_size(sizes[i], kernel[i], stride[i], padding[i], dilation[i], ceil) for i in range(3)]
    y = np.zeros((n, c, *outs))
    for o in itertools.product(*(range(v) for v in outs)):
        taps, pad_taps = [], 0
        for t in itertools.product(*(range(k) for k in kernel)):
            pos = [o[i] * stride[i] - padding[i] + t[i] * dilation[i] for i in range(3)]
            inside = all(0 <= pos[i] < sizes[i] for i in range(3))
            within_pad = all(-padding[i] <= pos[i] < sizes[i] + padding[i] for i in range(3))
            if inside:
                taps.append(x[:, :, pos[0], pos[1], pos[2]])
            elif within_pad:
                pad_taps += 1
        stacked = np.stack(taps)
        if kind == "max":
            y[(slice(None), slice(None), *o)] = stacked.max(0)
        else:
            count = len(taps) + (pad_taps if include_pad else 0)
            y[(slice(None), slice(None), *o)] = stacked.sum(0) / count
    return y


CASES = [
    dict(kernel=(2, 2, 2), stride=(2, 2, 2), padding=(0, 0, 0)),
    dict(kernel=(3, 2, 2), stride=(1, 2, 1), padding=(1, 1, 0)),
    dict(kernel=(2, 3, 2), stride=(2, 2, 2), padding=(1, 1, 1), ceil=True),
    dict(kernel=(3, 3, 3), stride=(2, 1, 2), padding=(1, 0, 1), include_pad=False),
    dict(kernel=(2, 2, 3), stride=(1, 1, 1), padding=(0, 1, 1), dilation=(2, 1, 1)),
]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("case", CASES, ids=[str(i) for i in range(len(CASES))])
def test_pools_match_the_window_loop(device, case):
    x = np.random.default_rng(0).standard_normal((2, 3, 6, 5, 7)).astype(np.float32)
    t = burn.tensor(x, device=device)
    k, s, p = case["kernel"], case["stride"], case["padding"]
    d, ceil, inc = case.get("dilation", (1, 1, 1)), case.get("ceil", False), case.get("include_pad", True)
    got = F.max_pool3d(t, k, s, p, d, ceil_mode=ceil).numpy()
    np.testing.assert_allclose(got, _ref_pool(x, "max", k, s, p, d, ceil), rtol=0, atol=0)
    if d == (1, 1, 1):
        got = F.avg_pool3d(t, k, s, p, ceil_mode=ceil, count_include_pad=inc).numpy()
        want = _ref_pool(x, "avg", k, s, p, ceil=ceil, include_pad=inc)
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("device", DEVICES)
def test_max_pool3d_indices_and_modules(device):
    x = np.random.default_rng(1).standard_normal((1, 2, 4, 4, 6)).astype(np.float32)
    t = burn.tensor(x, device=device)
    values, indices = F.max_pool3d(t, 2, return_indices=True)
    flat = x.reshape(1, 2, -1)
    picked = np.take_along_axis(flat, indices.numpy().reshape(1, 2, -1).astype(np.int64), 2)
    np.testing.assert_array_equal(picked.reshape(values.shape), values.numpy())
    pool = nn.MaxPool3dConfig(2, stride=2).init()
    np.testing.assert_array_equal(pool(t).numpy(), values.numpy())
    avg = nn.AvgPool3d((1, 2, 2), stride=(1, 2, 2))  # the PyTorch spelling of the module
    want = _ref_pool(x, "avg", (1, 2, 2), (1, 2, 2), (0, 0, 0))
    np.testing.assert_allclose(avg(t).numpy(), want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("device", DEVICES)
def test_adaptive_3d_pools_match_their_windows(device):
    x = np.random.default_rng(2).standard_normal((1, 2, 5, 7, 6)).astype(np.float32)
    out = (2, 3, 4)

    def window(i: int, n: int, o: int) -> slice:
        return slice(i * n // o, -(-(i + 1) * n // o))

    want_avg, want_max = np.zeros((1, 2, *out)), np.zeros((1, 2, *out))
    for o in itertools.product(*(range(v) for v in out)):
        w = x[(slice(None), slice(None), *(window(o[i], x.shape[2 + i], out[i]) for i in range(3)))]
        want_avg[(slice(None), slice(None), *o)] = w.mean(axis=(2, 3, 4))
        want_max[(slice(None), slice(None), *o)] = w.max(axis=(2, 3, 4))
    t = burn.tensor(x, device=device)
    np.testing.assert_allclose(F.adaptive_avg_pool3d(t, out).numpy(), want_avg, rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(F.adaptive_max_pool3d(t, out).numpy(), want_max.astype(np.float32))
    for module in (nn.AdaptiveAvgPool3dConfig(out).init(), nn.AdaptiveAvgPool3d(out)):  # config, shorthand
        np.testing.assert_allclose(module(t).numpy(), want_avg, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("kind", ["max", "avg"])
def test_gradients_match_finite_differences(kind):
    rng = np.random.default_rng(3)
    x = rng.standard_normal((1, 2, 4, 5, 4))  # float64; distinct values, so max windows have one winner
    w = rng.standard_normal((1, 2, 3, 3, 2))
    dev = burn.device("cpu", autodiff=True)

    def f(a: np.ndarray) -> float:
        t = burn.tensor(a, device=dev)
        y = F.max_pool3d(t, (2, 3, 2), (1, 2, 2), (0, 1, 0)) if kind == "max" else None
        if kind == "avg":
            y = F.avg_pool3d(t, (2, 3, 2), (1, 2, 2), (0, 1, 0), count_include_pad=False)
        return float((y * burn.tensor(w, device=dev)).sum().item())

    t = burn.tensor(x, device=dev).require_grad()
    y = F.max_pool3d(t, (2, 3, 2), (1, 2, 2), (0, 1, 0)) if kind == "max" else None
    if kind == "avg":
        y = F.avg_pool3d(t, (2, 3, 2), (1, 2, 2), (0, 1, 0), count_include_pad=False)
    grads = (y * burn.tensor(w, device=dev)).sum().backward()
    got = t.grad(grads).numpy()
    eps, want = 1e-6, np.zeros_like(x)
    for i in range(x.size):
        e = np.zeros(x.size)
        e[i] = eps
        e = e.reshape(x.shape)
        want.flat[i] = (f(x + e) - f(x - e)) / (2 * eps)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-7)


def test_bad_arguments_name_the_argument():
    x = burn.ones(1, 1, 4, 4, 4)
    with pytest.raises(burn.ShapeError, match="max_pool3d"):
        F.max_pool3d(burn.ones(1, 4, 4, 4), 2)  # 4-d input
    with pytest.raises((ValueError, TypeError), match="kernel_size"):
        F.avg_pool3d(x, (2, 2))
    assert math.isfinite(float(F.avg_pool3d(x, 2).sum().item()))


def test_match_torch():
    torch = pytest.importorskip("torch")
    x = np.random.default_rng(4).standard_normal((2, 3, 6, 5, 7)).astype(np.float32)
    tx = torch.from_numpy(x)
    for case in CASES:
        k, s, p = case["kernel"], case["stride"], case["padding"]
        d, ceil, inc = case.get("dilation", (1, 1, 1)), case.get("ceil", False), case.get("include_pad", True)
        want = torch.nn.functional.max_pool3d(tx, k, s, p, d, ceil_mode=ceil).numpy()
        np.testing.assert_array_equal(F.max_pool3d(burn.tensor(x), k, s, p, d, ceil_mode=ceil).numpy(), want)
        want = torch.nn.functional.avg_pool3d(tx, k, s, p, ceil_mode=ceil, count_include_pad=inc).numpy()
        got = F.avg_pool3d(burn.tensor(x), k, s, p, ceil_mode=ceil, count_include_pad=inc).numpy()
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
