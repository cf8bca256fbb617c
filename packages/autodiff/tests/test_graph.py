"""Graph behaviour: seeds, detach, no graph for untracked tensors, freeing after backward, independent
graphs, the Gradients container, checkpointing and device wiring."""

from __future__ import annotations

import gc
import weakref

import burn
import numpy as np
import pytest
from burn_autodiff import Autodiff, GraphFreedError

DEV = burn.device("cpu", autodiff=True)


def t(data, **kw):
    return burn.tensor(np.asarray(data, dtype=np.float64), dtype=burn.float64, device=DEV, **kw)


def test_device_builds_autodiff_backend():
    b = DEV.backend
    assert isinstance(b, Autodiff) and b.is_autodiff
    assert b.inner is burn.device("cpu").backend
    assert b.checkpointing == "none"
    assert burn.device("cpu", autodiff=True, checkpointing="balanced").backend.checkpointing == "balanced"


def test_bad_checkpointing_option_is_a_clear_error():
    with pytest.raises(ValueError, match="checkpointing must be one of"):
        _ = burn.device("cpu", autodiff=True, checkpointing="sometimes").backend


def test_wrapping_an_autodiff_backend_is_refused():
    with pytest.raises(TypeError, match="already an autodiff backend"):
        Autodiff(DEV.backend)


def test_scalar_backward_and_grad():
    x = t([1.0, -2.0, 3.0]).require_grad()
    grads = (x * x).sum().backward()
    assert isinstance(grads, burn.Gradients)
    gx = x.grad(grads)
    assert gx.device == burn.device("cpu")  # gradients live on the inner backend
    np.testing.assert_allclose(gx.numpy(), [2.0, -4.0, 6.0])


def test_non_scalar_output_needs_a_seed():
    x = t([[1.0, 2.0], [3.0, 4.0]]).require_grad()
    y = x * 3.0
    with pytest.raises(burn.ShapeError, match="explicit seed"):
        y.backward()
    with pytest.raises(burn.ShapeError, match="seed shape"):
        y.backward(t([1.0, 2.0]))
    grads = y.backward(t([[1.0, 0.0], [2.0, -1.0]]))
    np.testing.assert_allclose(x.grad(grads).numpy(), [[3.0, 0.0], [6.0, -3.0]])


def test_detach_cuts_the_graph():
    x = t([1.0, 2.0]).require_grad()
    y = (x * 2.0).detach()
    assert not y.is_require_grad
    z = (y * x).sum()  # only the direct x path contributes
    np.testing.assert_allclose(x.grad(z.backward()).numpy(), [2.0, 4.0])


def test_untracked_ops_build_no_graph():
    a, b = t([1.0, 2.0]), t([3.0, 4.0])
    c = ((a * b).exp() @ b).sqrt()
    for tensor in (a, b, c):
        assert tensor.primitive.node is None
        assert not tensor.is_require_grad
    assert len(c.backward()) == 0  # nothing requires grad: empty gradients, as in Burn


def test_only_tracked_inputs_get_gradients():
    x = t([[1.0, 2.0]]).require_grad()
    w = t([[1.0], [2.0]])  # constant
    grads = (x @ w).sum().backward()
    assert w.grad(grads) is None
    np.testing.assert_allclose(x.grad(grads).numpy(), [[1.0, 2.0]])


def test_non_differentiable_ops_are_untracked():
    x = t([0.5, -1.0, 2.0]).require_grad()
    for out in (x > 0, x.argmax(), x.sort_with_indices()[1], x.int(), x.isnan()):
        assert out.primitive.node is None


def test_require_grad_rules():
    x = t([1.0, 2.0]).require_grad()
    assert x.require_grad().primitive.node is x.primitive.node  # a leaf stays the same leaf
    with pytest.raises(burn.DTypeError):
        burn.tensor([1, 2], device=DEV).require_grad()
    with pytest.raises(burn.DeviceError):
        burn.tensor([1.0]).require_grad()


def test_gradients_accumulate_over_paths_and_broadcast():
    x = t([[1.0, 2.0, 3.0]]).require_grad()  # (1, 3) broadcast against (2, 3)
    m = t([[1.0, 1.0, 1.0], [2.0, 2.0, 2.0]])
    y = (x * m + x.exp()).sum()
    expected = m.numpy().sum(0, keepdims=True) + 2 * np.exp(x.numpy())
    np.testing.assert_allclose(x.grad(y.backward()).numpy(), expected)


def test_graph_is_freed_after_backward():
    x = t(np.linspace(-1.0, 1.0, 6)).require_grad()
    y = x.exp()  # exp saves its output for the backward
    saved = weakref.ref(y.primitive.inner)
    loss = (y * y).sum()
    del y
    gc.collect()
    assert saved() is not None  # held by the graph behind loss
    loss.backward()
    gc.collect()
    assert saved() is None  # loss is alive, but its graph no longer holds anything
    with pytest.raises(GraphFreedError, match="already consumed"):
        loss.backward()


def test_independent_graphs_backward_independently():
    x = t([1.0, 2.0]).require_grad()
    a = (x * x).sum()
    b = (x * 3.0).sum()
    gb = b.backward()
    ga = a.backward()
    np.testing.assert_allclose(x.grad(ga).numpy(), [2.0, 4.0])
    np.testing.assert_allclose(x.grad(gb).numpy(), [3.0, 3.0])


def test_gradients_container():
    x = t([1.0, 2.0]).require_grad()
    w = t([3.0, 4.0]).require_grad()
    grads = (x * w).sum().backward()
    assert len(grads) == 2
    np.testing.assert_allclose(grads.get(x).numpy(), [3.0, 4.0])
    removed = grads.remove(w)
    np.testing.assert_allclose(removed.numpy(), [1.0, 2.0])
    assert w.grad(grads) is None and len(grads) == 1


def _mlp_loss(dev):
    rng = np.random.default_rng(0)
    xs = burn.tensor(rng.standard_normal((16, 8)), dtype=burn.float64, device=dev)
    w1 = burn.tensor(rng.standard_normal((8, 32)) * 0.3, dtype=burn.float64, device=dev).require_grad()
    w2 = burn.tensor(rng.standard_normal((32, 4)) * 0.3, dtype=burn.float64, device=dev).require_grad()
    h = xs @ w1
    # a layer-norm-like chain of element-wise ops: what balanced checkpointing recomputes
    h = (h - h.mean(1, keepdim=True)) / (h.var(1, keepdim=True) + 1e-5).sqrt()
    h = h.tanh() * h.sigmoid()
    loss = ((h @ w2).exp() + 1.0).log().mean()
    return loss, (w1, w2)


def test_balanced_checkpointing_same_grads_less_memory():
    plain, balanced = (
        burn.device("cpu", autodiff=True),
        burn.device("cpu", autodiff=True, checkpointing="balanced"),
    )
    loss_p, params_p = _mlp_loss(plain)
    loss_b, params_b = _mlp_loss(balanced)
    kept_p = plain.backend.graph_bytes(loss_p.primitive)
    kept_b = balanced.backend.graph_bytes(loss_b.primitive)
    assert kept_b < kept_p / 2, (kept_b, kept_p)
    gp, gb = loss_p.backward(), loss_b.backward()
    for a, b in zip(params_p, params_b):
        np.testing.assert_allclose(b.grad(gb).numpy(), a.grad(gp).numpy(), rtol=1e-12, atol=1e-14)


def test_balanced_recompute_through_long_chain_and_multi_output():
    dev = burn.device("cpu", autodiff=True, checkpointing="balanced")
    x = burn.tensor(np.linspace(0.1, 1.0, 5), dtype=burn.float64, device=dev).require_grad()
    y = x
    for _ in range(1500):  # deeper than the recursion limit: recompute must be iterative
        y = y * 1.0001 + 0.0
    vals = y.sort(0, descending=True)
    loss = (vals * vals).sum()
    g = x.grad(loss.backward()).numpy()
    np.testing.assert_allclose(g, 2 * x.numpy() * 1.0001**3000, rtol=1e-9)
