"""What a backward costs: the gradients of slices of one input written at once (one cat for pieces that
tile it, one pad for a single window, zeros only for gaps), and the graph keeping only what the rules
read, released node by node as the backward runs. Values are checked against numpy references."""

from __future__ import annotations

import gc
import weakref
from collections import Counter

import burn
import numpy as np
import pytest
from burn_autodiff import leaf_gradients

DEV = burn.device("cpu", autodiff=True)
_rng = np.random.default_rng(7)


def t(data, **kw):
    return burn.tensor(np.asarray(data, dtype=np.float64), dtype=burn.float64, device=DEV, **kw)


@pytest.fixture
def calls(monkeypatch):
    """Counts the inner backend's calls of the ops a slice's gradient could use, with output shapes."""
    seen: Counter = Counter()
    inner = DEV.backend.inner
    for name in ("full", "slice_assign", "cat", "pad", "binary"):
        fn = getattr(inner, name)

        def counting(*args, _fn=fn, _name=name):
            out = _fn(*args)
            seen[_name] += 1
            seen[(_name, tuple(out.shape))] += 1
            return out

        monkeypatch.setattr(inner, name, counting)
    return seen


def test_split_backward_is_one_cat(calls):
    xs = _rng.standard_normal((2, 4, 12))
    c = _rng.standard_normal((2, 4, 4))
    x = t(xs).require_grad()
    q, k, v = x.split(4, 2)  # a fused QKV projection's split
    loss = (q * k).sum() + (v * t(c)).sum()
    calls.clear()
    grads = loss.backward()
    expected = np.concatenate([xs[..., 4:8], xs[..., 0:4], c], axis=2)
    np.testing.assert_allclose(x.grad(grads).numpy(), expected, rtol=1e-12)
    assert calls["cat"] == 1 and calls[("cat", (2, 4, 12))] == 1
    assert calls["slice_assign"] == 0 and calls["pad"] == 0
    assert calls[("full", (2, 4, 12))] == 0  # no zero tensor of the input's shape


def test_single_window_backward_is_one_pad(calls):
    xs = _rng.standard_normal((4, 6))
    x = t(xs).require_grad()
    loss = x[1:3, 2:5].exp().sum()
    calls.clear()
    grads = loss.backward()
    expected = np.zeros_like(xs)
    expected[1:3, 2:5] = np.exp(xs[1:3, 2:5])
    np.testing.assert_allclose(x.grad(grads).numpy(), expected, rtol=1e-12)
    assert calls["pad"] == 1 and calls[("full", (4, 6))] == 0 and calls["slice_assign"] == 0


def test_unused_chunks_get_zeros_only_for_the_gaps(calls):
    xs = _rng.standard_normal((3, 8))
    x = t(xs).require_grad()
    a, _, c, _ = x.chunk(4, 1)
    loss = (a * 2.0).sum() + c.sin().sum()
    calls.clear()
    grads = loss.backward()
    expected = np.zeros_like(xs)
    expected[:, 0:2] = 2.0
    expected[:, 4:6] = np.cos(xs[:, 4:6])
    np.testing.assert_allclose(x.grad(grads).numpy(), expected, rtol=1e-12)
    assert calls["cat"] == 1 and calls[("full", (3, 2))] == 2 and calls[("full", (3, 8))] == 0


def test_a_tied_embedding_adds_its_rows_into_the_heads_gradient(calls, monkeypatch):
    ws = _rng.standard_normal((7, 3))
    idx = np.array([[0, 4, 4], [6, 1, 0]])
    w = t(ws).require_grad()
    hidden = burn.nn.functional.embedding(burn.tensor(idx, device=DEV), w)  # (2, 3, 3)
    loss = (hidden @ w.transpose()).sum()  # the head shares the table
    calls.clear()
    grads = loss.backward()
    # the head gives every row the sum of the looked-up rows; each lookup adds the sum of all rows
    expected = np.tile(ws[idx].reshape(-1, 3).sum(0), (7, 1))
    np.add.at(expected, idx.ravel(), np.broadcast_to(ws.sum(0), (6, 3)))
    np.testing.assert_allclose(w.grad(grads).numpy(), expected, rtol=1e-12)
    assert calls[("full", (7, 3))] == 0  # no zero table; the rows are added into the head's gradient
    assert calls[("binary", (7, 3))] == 0


def test_windows_and_dense_uses_of_one_input_add_up():
    xs = _rng.standard_normal((3, 5))
    x = t(xs).require_grad()
    head, tail = x.split([2, 3], 1)
    loss = (x * x).sum() + head.exp().sum() + (tail[1:, ::2] * 3.0).sum()  # a strided window too
    expected = 2 * xs
    expected[:, :2] += np.exp(xs[:, :2])
    expected[1:, 2::2] += 3.0
    np.testing.assert_allclose(x.grad(loss.backward()).numpy(), expected, rtol=1e-12)


def test_overlapping_windows_add_up():
    xs = _rng.standard_normal((3, 4))
    x = t(xs).require_grad()
    loss = (x[:2, 1:] * x[1:, :3]).sum()
    expected = np.zeros_like(xs)
    expected[:2, 1:] += xs[1:, :3]
    expected[1:, :3] += xs[:2, 1:]
    np.testing.assert_allclose(x.grad(loss.backward()).numpy(), expected, rtol=1e-12)


def test_saved_values_are_released_as_the_backward_runs():
    x = t(np.linspace(-1.0, 1.0, 6)).require_grad()
    w = t(np.full(6, 0.5)).require_grad()
    y = x.exp()  # exp saves its output; so does the mul below
    saved = weakref.ref(y.primitive.inner)
    loss = (y * w).sum()
    del y
    alive_when_x_done = []

    def on_leaf(leaf_id, grad):
        gc.collect()
        if leaf_id == x._b.node_id(x._p):
            alive_when_x_done.append(saved() is not None)

    with leaf_gradients(on_leaf):
        grads = loss.backward()
    assert alive_when_x_done == [False]  # freed before the backward ended, once exp's rule ran
    np.testing.assert_allclose(x.grad(grads).numpy(), 0.5 * np.exp(x.numpy()), rtol=1e-12)


def test_an_untracked_operands_partner_is_not_kept():
    x = t(_rng.standard_normal((3, 4))).require_grad()
    mask = t(_rng.random((3, 4)) < 0.5)
    y = x * mask  # x's gradient reads the mask only
    assert y.primitive.node.saved_in[0] is None and y.primitive.node.saved_in[1] is not None
    a = t(_rng.standard_normal((2, 2, 3)))
    z = a @ x  # x's gradient (a weight shared over a's batch) reads a only
    assert z.primitive.node.saved_in[1] is None and z.primitive.node.saved_in[0] is not None
    p = x**3.0  # the output is read only for a tracked exponent's gradient
    assert p.primitive.node.saved_out is None and p.primitive.node.saved_in[0] is not None
    grads = (y.sum() + z.sum() + p.sum()).backward()
    expected = mask.numpy() + a.numpy().reshape(-1, 3).sum(0)[:, None] + 3 * x.numpy() ** 2
    np.testing.assert_allclose(x.grad(grads).numpy(), expected, rtol=1e-12)


def test_norms_keep_the_centred_values_once():
    F = burn.nn.functional
    xs = _rng.standard_normal((8, 6, 5))
    x = t(xs).require_grad()
    w, b = t(_rng.standard_normal(6)).require_grad(), t(_rng.standard_normal(6)).require_grad()
    full = xs.nbytes
    kept = DEV.backend.graph_bytes
    bn = F.batch_norm(x, t(np.zeros(6)), t(np.ones(6)), w, b, training=True)
    assert kept(bn.primitive) < 1.5 * full  # the centred values (before: three full-size tensors)
    ln = F.layer_norm(x, 5, t(np.ones(5)).require_grad(), None)
    assert kept(ln.primitive) < 2.5 * full  # the centred and the normalised values (before: three)
    mean = xs.mean((0, 2), keepdims=True)
    ref = (xs - mean) / np.sqrt(xs.var((0, 2), keepdims=True) + 1e-5) * w.numpy()[:, None] + b.numpy()[
        :, None
    ]
    np.testing.assert_allclose(bn.numpy(), ref, rtol=1e-10, atol=1e-12)
