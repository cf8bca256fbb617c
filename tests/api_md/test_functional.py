"""API.md, nn: burn.nn.functional as F, each call against its numpy reference."""

from __future__ import annotations

import burn
import numpy as np
import pytest
from burn.nn import functional as F
from burn_api_md._helpers import _gelu, _layer_norm, _log_softmax, _sigmoid, close, rng


def _conv_ref(x: np.ndarray, w: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Valid cross-correlation, stride 1: x (N, C, *S), w (O, C, *K) -> (N, O, *(S - K + 1))."""
    k = w.shape[2:]
    out_sp = tuple(s - kk + 1 for s, kk in zip(x.shape[2:], k))
    out = np.zeros((x.shape[0], w.shape[0], *out_sp))
    for pos in np.ndindex(*out_sp):
        window = x[(slice(None), slice(None), *(slice(p, p + kk) for p, kk in zip(pos, k)))]
        out[(slice(None), slice(None), *pos)] = np.tensordot(
            window, w, axes=(range(1, w.ndim), range(1, w.ndim))
        )
    return out + b.reshape(1, -1, *([1] * len(k)))


def _conv_transpose_ref(x: np.ndarray, w: np.ndarray, b: np.ndarray, stride: int) -> np.ndarray:
    """Transposed convolution, no padding: x (N, C, *S), w (C, O, *K): each input scatters w * x."""
    k = w.shape[2:]
    out_sp = tuple((s - 1) * stride + kk for s, kk in zip(x.shape[2:], k))
    out = np.zeros((x.shape[0], w.shape[1], *out_sp))
    for pos in np.ndindex(*x.shape[2:]):
        contrib = np.tensordot(x[(slice(None), slice(None), *pos)], w, axes=(1, 0))  # (N, O, *K)
        region = tuple(slice(p * stride, p * stride + kk) for p, kk in zip(pos, k))
        out[(slice(None), slice(None), *region)] += contrib
    return out + b.reshape(1, -1, *([1] * len(k)))


def _conv_case(nd: int, transposed: bool) -> tuple[burn.Tensor, np.ndarray]:
    """F.conv{nd}d (valid, stride 1) or F.conv_transpose{nd}d (stride 2) and its numpy reference."""
    r = rng(10 + nd)
    x = r.normal(size=(2, 2, *([4] * nd))).astype(np.float32)
    w = r.normal(size=(2, 3, *([2] * nd)) if transposed else (3, 2, *([2] * nd))).astype(np.float32)
    b = r.normal(size=3).astype(np.float32)
    xt, wt, bt = burn.tensor(x), burn.tensor(w), burn.tensor(b)
    if transposed:
        return getattr(F, f"conv_transpose{nd}d")(xt, wt, bt, stride=2), _conv_transpose_ref(x, w, b, 2)
    return getattr(F, f"conv{nd}d")(xt, wt, bt), _conv_ref(x, w, b)


LOGITS = rng(5).normal(size=(4, 3)).astype(np.float32)
TARGETS = np.array([0, 2, 1, 2])


def _cross_entropy_ref(label_smoothing: float = 0.0, weight=None, ignore_index=None) -> float:
    """PyTorch's definition: weighted mean of -log p[target] (smoothed: mixed with the uniform target)."""
    logp = _log_softmax(LOGITS)
    c = logp.shape[1]
    w = np.ones(c) if weight is None else np.asarray(weight, np.float64)
    keep = TARGETS != ignore_index if ignore_index is not None else np.ones(len(TARGETS), bool)
    nll = -logp[np.arange(len(TARGETS)), TARGETS] * w[TARGETS]
    smooth = -(logp * w).sum(1) / c
    per = (1 - label_smoothing) * nll + label_smoothing * smooth
    return float(per[keep].sum() / w[TARGETS][keep].sum())


ACT_X = rng(6).normal(size=(3, 4)).astype(np.float32)  # the input of every FUNCTIONAL row
PRED = rng(8).normal(size=(3, 4)).astype(np.float64) * 2.0
BINARY = (rng(7).uniform(size=(3, 4)) > 0.5).astype(np.float64)
MEANS = np.array([0.0, 1.0, 2.0, 3.0])


def _huber_ref(r: np.ndarray, delta: float) -> np.ndarray:
    a = np.abs(r)
    return np.where(a <= delta, 0.5 * r * r, delta * (a - 0.5 * delta))


def _bce_ref(p: np.ndarray, t: np.ndarray) -> float:
    return float(np.mean(-(t * np.log(p) + (1 - t) * np.log(1 - p))))


def _kl_ref(x: np.ndarray) -> float:
    """KL(target || exp(input)) averaged over elements; input log_softmax(PRED), target softmax(x)."""
    return float(np.mean(np.exp(_log_softmax(x)) * (_log_softmax(x) - _log_softmax(PRED))))


def _f32(x: np.ndarray) -> burn.Tensor:
    return burn.tensor(x.astype(np.float32))


RAMP = (10.0 * np.arange(6)[:, None] + np.arange(6)[None, :]).astype(np.float32)  # f(h, w) = 10 h + w


def _cubic(d: float, a: float = -0.75) -> float:
    """Keys' cubic convolution kernel with PyTorch's a = -0.75."""
    d = abs(d)
    if d <= 1:
        return (a + 2) * d**3 - (a + 3) * d**2 + 1
    return a * d**3 - 5 * a * d**2 + 8 * a * d - 4 * a if d < 2 else 0.0


def _resize_ramp(mode: str) -> tuple[burn.Tensor, float]:
    """The 6x6 ramp doubled; the value at dst (5, 5), whose half-pixel source is (2.25, 2.25) with
    every tap inside the image. The ramp is separable, so the value is 10 * s + s for the 1-d s."""
    x = burn.tensor(RAMP.reshape(1, 1, 6, 6))
    if mode == "bilinear":
        out, s = F.interpolate(x, scale_factor=2, mode="bilinear"), 2.25  # linear taps reproduce a ramp
    else:
        out, s = (
            F.interpolate(x, size=(12, 12), mode="bicubic"),
            sum(_cubic(2.25 - i) * i for i in range(1, 5)),
        )
    return out[0, 0, 5, 5], 10.0 * s + s


# name, F call on the input tensor (ACT_X), numpy reference on the float64 input
# fmt: off
FUNCTIONAL = [
    ("relu", F.relu, lambda x: np.maximum(x, 0)),
    ("gelu", F.gelu, _gelu),
    ("silu", F.silu, lambda x: x * _sigmoid(x)),
    ("leaky_relu", lambda t: F.leaky_relu(t, 0.2), lambda x: np.where(x > 0, x, 0.2 * x)),
    ("prelu", lambda t: F.prelu(t, burn.tensor([0.3])), lambda x: np.where(x > 0, x, 0.3 * x)),
    ("sigmoid", F.sigmoid, _sigmoid),
    ("tanh", F.tanh, np.tanh),
    ("softplus", F.softplus, lambda x: np.log1p(np.exp(x))),
    ("mish", F.mish, lambda x: x * np.tanh(np.log1p(np.exp(x)))),
    ("hard_sigmoid", lambda t: F.hard_sigmoid(t * 4.0), lambda x: np.clip(x * 4.0 / 6.0 + 0.5, 0.0, 1.0)),
    ("softmax", lambda t: F.softmax(t, dim=1), lambda x: np.exp(_log_softmax(x, 1))),
    ("log_softmax", lambda t: F.log_softmax(t, 0), lambda x: _log_softmax(x, 0)),
    ("dropout-off", lambda t: F.dropout(t, 0.5), lambda x: x),  # off autodiff: identity
    ("dropout-p0", lambda t: F.dropout(t, 0.0, training=True), lambda x: x),
    ("linear", lambda t: F.linear(t, burn.ones((4, 2)), burn.tensor([1.0, 2.0])), lambda x: x.sum(1, keepdims=True) + [1.0, 2.0]),
    ("embedding", lambda t: F.embedding(burn.tensor([[2, 0]]), t), lambda x: x[[[2, 0]]]),
    ("max_pool1d", lambda t: F.max_pool1d(t[None], 2), lambda x: x[None].reshape(1, 3, 2, 2).max(-1)),
    ("max_pool2d", lambda t: F.max_pool2d(t[None, None], (1, 2)), lambda x: x.reshape(1, 1, 3, 2, 2).max(-1)),
    ("avg_pool1d", lambda t: F.avg_pool1d(t[None], 2), lambda x: x[None].reshape(1, 3, 2, 2).mean(-1)),
    ("avg_pool2d", lambda t: F.avg_pool2d(t[None, None], (3, 2)), lambda x: x.reshape(1, 1, 1, 3, 2, 2).mean((3, 5))),
    ("adaptive_avg_pool1d", lambda t: F.adaptive_avg_pool1d(t[None], 1), lambda x: x[None].mean(-1, keepdims=True)),
    ("adaptive_avg_pool2d", lambda t: F.adaptive_avg_pool2d(t[None, None], (1, 2)), lambda x: x.reshape(1, 1, 1, 3, 2, 2).mean((3, 5))),
    ("interpolate-nearest", lambda t: F.interpolate(t[None, None], size=(6, 8), mode="nearest"), lambda x: x.repeat(2, 0).repeat(2, 1)[None, None]),
    ("layer_norm", lambda t: F.layer_norm(t, 4, burn.full((4,), 2.0), burn.full((4,), 0.5)), lambda x: 2.0 * _layer_norm(x, (-1,)) + 0.5),
    ("batch_norm", lambda t: F.batch_norm(t, _f32(MEANS), burn.full((4,), 4.0)), lambda x: (x - MEANS) / np.sqrt(4.0 + 1e-5)),
    ("binary_cross_entropy", lambda t: F.binary_cross_entropy(F.sigmoid(t), _f32(BINARY)), lambda x: _bce_ref(_sigmoid(x), BINARY)),
    ("binary_cross_entropy_with_logits", lambda t: F.binary_cross_entropy_with_logits(t, _f32(BINARY)), lambda x: _bce_ref(_sigmoid(x), BINARY)),
    ("mse_loss", lambda t: F.mse_loss(_f32(PRED), t), lambda x: np.mean((PRED - x) ** 2)),
    ("huber_loss", lambda t: F.huber_loss(_f32(PRED), t, delta=1.5), lambda x: np.mean(_huber_ref(PRED - x, 1.5))),
    ("smooth_l1_loss", lambda t: F.smooth_l1_loss(_f32(PRED), t, beta=0.5), lambda x: np.mean(_huber_ref(PRED - x, 0.5) / 0.5)),
    ("kl_div", lambda t: F.kl_div(_f32(_log_softmax(PRED)), F.softmax(t, -1)), _kl_ref),
]
# fmt: on


@pytest.mark.parametrize("call, ref", [f[1:] for f in FUNCTIONAL], ids=[f[0] for f in FUNCTIONAL])
def test_functional(call, ref):
    close(call(burn.tensor(ACT_X)), ref(ACT_X.astype(np.float64)), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("transposed", [False, True], ids=["conv", "conv_transpose"])
@pytest.mark.parametrize("nd", [1, 2, 3])
def test_functional_convolutions(nd, transposed):
    close(*_conv_case(nd, transposed), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("mode", ["bilinear", "bicubic"])
def test_functional_interpolate_linear_modes(mode):
    close(*_resize_ramp(mode), rtol=1e-5)


CROSS_ENTROPY_OPTIONS = [
    {},
    {"label_smoothing": 0.1},
    {"weight": [1.0, 2.0, 0.5]},
    {"ignore_index": 1},
    {"label_smoothing": 0.1, "weight": [1.0, 2.0, 0.5], "ignore_index": 1},
]


@pytest.mark.parametrize("options", CROSS_ENTROPY_OPTIONS, ids=lambda o: ",".join(o) or "plain")
def test_functional_cross_entropy(options):
    kwargs = {k: burn.tensor(v) if k == "weight" else v for k, v in options.items()}
    got = F.cross_entropy(burn.tensor(LOGITS), burn.tensor(TARGETS), **kwargs)
    assert got.shape == ()
    close(got, _cross_entropy_ref(**options), rtol=1e-5)


def test_functional_pool_indices_and_dropout():
    x = ACT_X[None, None]  # (1, 1, 3, 4)
    values, indices = F.max_pool2d(burn.tensor(x), 2, stride=1, return_indices=True)
    assert values.shape == indices.shape == (1, 1, 2, 3) and indices.dtype.is_int
    # PyTorch's convention: each index points into the flattened (H, W) plane of the input
    np.testing.assert_array_equal(x.reshape(-1)[indices.numpy().reshape(-1)], values.numpy().reshape(-1))
    values1, indices1 = F.max_pool1d(burn.tensor(ACT_X[None]), 2, return_indices=True)
    np.testing.assert_array_equal(np.take_along_axis(ACT_X[None], indices1.numpy(), 2), values1.numpy())
    burn.seed(5)
    dropped = F.dropout(burn.ones((2000,)), 0.25, training=True).numpy()
    assert np.all(np.isclose(dropped, 0.0) | np.isclose(dropped, 1 / 0.75))  # kept values scaled by 1/(1-p)
    assert abs((dropped == 0).mean() - 0.25) < 0.04
