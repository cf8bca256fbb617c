"""Gradients through whole models: a 2-layer MLP against hand-written numpy backprop, and a small CNN
against finite differences of the whole loss (and against PyTorch as well when it is importable)."""

from __future__ import annotations

import burn
import burn.nn.functional as F
import numpy as np
import pytest

CHECKPOINTING = ["none", "balanced"]


def _mlp_data(rng):
    x = rng.standard_normal((8, 5))
    labels = rng.integers(0, 3, size=8)
    params = {
        "w1": rng.standard_normal((5, 7)) * 0.5,
        "b1": rng.standard_normal(7) * 0.1,
        "w2": rng.standard_normal((7, 3)) * 0.5,
        "b2": rng.standard_normal(3) * 0.1,
    }
    return x, labels, params


def _numpy_mlp_grads(x, labels, p):
    """Manual backprop of mean cross-entropy(relu(x @ w1 + b1) @ w2 + b2)."""
    n = x.shape[0]
    z1 = x @ p["w1"] + p["b1"]
    h = np.maximum(z1, 0.0)
    logits = h @ p["w2"] + p["b2"]
    e = np.exp(logits - logits.max(1, keepdims=True))
    probs = e / e.sum(1, keepdims=True)
    onehot = np.eye(3)[labels]
    loss = -np.mean(np.sum(onehot * np.log(probs), 1))
    dlogits = (probs - onehot) / n
    dh = dlogits @ p["w2"].T
    dz1 = dh * (z1 > 0)
    grads = {"w2": h.T @ dlogits, "b2": dlogits.sum(0), "w1": x.T @ dz1, "b1": dz1.sum(0)}
    return loss, grads


@pytest.mark.parametrize("checkpointing", CHECKPOINTING)
def test_mlp_gradients_match_numpy_backprop(checkpointing):
    x, labels, p = _mlp_data(np.random.default_rng(7))
    dev = burn.device("cpu", autodiff=True, checkpointing=checkpointing)
    ts = {k: burn.tensor(v, dtype=burn.float64, device=dev).require_grad() for k, v in p.items()}
    xt = burn.tensor(x, dtype=burn.float64, device=dev)
    onehot = burn.tensor(np.eye(3)[labels], dtype=burn.float64, device=dev)
    logits = (xt @ ts["w1"] + ts["b1"]).relu() @ ts["w2"] + ts["b2"]
    loss = -(F.log_softmax(logits, 1) * onehot).sum(1).mean()
    ref_loss, ref = _numpy_mlp_grads(x, labels, p)
    assert loss.item() == pytest.approx(ref_loss, rel=1e-12)
    grads = loss.backward()
    for k, t in ts.items():
        np.testing.assert_allclose(t.grad(grads).numpy(), ref[k], rtol=1e-10, atol=1e-12, err_msg=k)


def _cnn_params(rng):
    return {
        "w1": rng.standard_normal((4, 2, 3, 3)) * 0.4,
        "b1": rng.standard_normal(4) * 0.1,
        "w2": rng.standard_normal((4, 2, 2, 2)) * 0.4,  # groups=2
        "b2": rng.standard_normal(4) * 0.1,
        "w3": rng.standard_normal((4, 3)) * 0.4,
    }


def _cnn_loss(x, onehot, p):
    """conv(pad 1) -> relu -> max_pool 2 -> grouped conv -> tanh -> adaptive avg pool -> linear -> NLL."""
    h = F.conv2d(x, p["w1"], p["b1"], padding=1).relu()
    h = F.max_pool2d(h, 2)
    h = F.conv2d(h, p["w2"], p["b2"], groups=2).tanh()
    h = F.adaptive_avg_pool2d(h, 1).flatten(1)
    return -(F.log_softmax(h @ p["w3"], 1) * onehot).sum(1).mean()


def _cnn_data():
    rng = np.random.default_rng(11)
    x = rng.standard_normal((2, 2, 6, 6))
    onehot = np.eye(3)[[0, 2]]
    return x, onehot, _cnn_params(rng)


def _torch_cnn_grads(x, onehot, p):
    try:
        import torch
    except ImportError:
        return None
    tp = {k: torch.tensor(v, dtype=torch.float64, requires_grad=True) for k, v in p.items()}
    tf = torch.nn.functional
    h = tf.conv2d(torch.tensor(x), tp["w1"], tp["b1"], padding=1).relu()
    h = tf.max_pool2d(h, 2)
    h = tf.conv2d(h, tp["w2"], tp["b2"], groups=2).tanh()
    h = tf.adaptive_avg_pool2d(h, 1).flatten(1)
    loss = -(tf.log_softmax(h @ tp["w3"], 1) * torch.tensor(onehot)).sum(1).mean()
    loss.backward()
    return {k: v.grad.numpy() for k, v in tp.items()}


@pytest.mark.parametrize("checkpointing", CHECKPOINTING)
def test_cnn_gradients_match_finite_differences(checkpointing):
    x, onehot, p = _cnn_data()
    dev = burn.device("cpu", autodiff=True, checkpointing=checkpointing)
    plain = burn.device("cpu")

    def loss_on(device, params, track=False):
        ts = {k: burn.tensor(v, dtype=burn.float64, device=device) for k, v in params.items()}
        if track:
            ts = {k: t.require_grad() for k, t in ts.items()}
        xt = burn.tensor(x, dtype=burn.float64, device=device)
        ot = burn.tensor(onehot, dtype=burn.float64, device=device)
        return _cnn_loss(xt, ot, ts), ts

    loss, ts = loss_on(dev, p, track=True)
    grads = loss.backward()
    got = {k: t.grad(grads).numpy() for k, t in ts.items()}
    eps = 1e-6
    for k, v in p.items():
        numeric = np.zeros_like(v)
        for j in range(v.size):
            shifted = []
            for sign in (1.0, -1.0):
                q = dict(p)
                q[k] = v.copy()
                q[k].reshape(-1)[j] += sign * eps
                shifted.append(loss_on(plain, q)[0].item())
            numeric.reshape(-1)[j] = (shifted[0] - shifted[1]) / (2 * eps)
        np.testing.assert_allclose(got[k], numeric, rtol=1e-5, atol=1e-8, err_msg=k)
    ref = _torch_cnn_grads(x, onehot, p)
    if ref is not None:  # an independent implementation, where installed
        for k in p:
            np.testing.assert_allclose(got[k], ref[k], rtol=1e-9, atol=1e-12, err_msg=f"torch {k}")
