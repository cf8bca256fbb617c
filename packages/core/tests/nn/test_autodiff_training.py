"""Modules and optimizers on an autodiff device: params are require_grad leaves, gradients reach them,
dropout/batch-norm train, ``valid()`` switches to inference, and a small MLP learns."""

import burn
import burn.nn.functional as F
import numpy as np
import pytest
from burn import nn, optim

pytest.importorskip("burn_autodiff")  # the [autodiff] extra

ADEV = burn.device("cpu", autodiff=True)
rng = np.random.default_rng(4)


def at(a):
    return burn.tensor(np.asarray(a), dtype="float32", device=ADEV)


def test_params_are_leaves_and_step_keeps_ids():
    m = nn.LinearConfig(3, 2).init(ADEV)
    assert all(p.value.is_require_grad for p in m.params())
    ids = m.param_ids()
    x = rng.normal(size=(4, 3))
    grads = m(at(x)).sum().backward()
    gp = optim.GradientsParams.from_grads(grads, m)
    # d(sum(x W + b))/dW = x^T 1, d/db = N
    np.testing.assert_allclose(gp.get(m.weight.id).numpy(), x.T @ np.ones((4, 2)), rtol=1e-5)
    np.testing.assert_allclose(gp.get(m.bias.id).numpy(), [4.0, 4.0])
    w0 = m.weight.val().numpy()
    m = optim.SgdConfig().init().step(0.1, m, grads)
    np.testing.assert_allclose(m.weight.val().numpy(), w0 - 0.1 * (x.T @ np.ones((4, 2))), rtol=1e-5)
    assert m.param_ids() == ids and all(p.value.is_require_grad for p in m.params())


def test_valid_copy_is_on_the_inner_backend():
    m = nn.LinearConfig(3, 2).init(ADEV)
    v = m.valid()
    assert v.devices() == [burn.device("cpu")] and v.param_ids() == m.param_ids()
    assert not any(p.value.is_require_grad for p in v.params())
    with pytest.raises(burn.DeviceError, match="autodiff"):
        optim.GradientsParams.from_grads(m(at(np.ones((1, 3)))).sum().backward(), v)


def test_dropout_trains_under_autodiff_and_stops_after_valid():
    d = nn.DropoutConfig(0.5).init()
    burn.seed(0)
    y = d(at(np.ones((50, 40)))).numpy()
    assert set(np.unique(y)) <= {0.0, 2.0} and 0.4 < (y == 0).mean() < 0.6
    x = burn.ones((3, 4))
    assert np.array_equal(d.valid()(x).numpy(), x.numpy())


def test_batch_norm_updates_running_stats_outside_the_graph():
    bn = nn.BatchNormConfig(2, momentum=0.1).init(ADEV)
    x = rng.normal(size=(6, 2, 3)) * 2 + 3
    out = bn(at(x))
    mean, var = x.mean(axis=(0, 2)), x.var(axis=(0, 2))
    np.testing.assert_allclose(bn.running_mean.val().numpy(), 0.1 * mean, rtol=1e-5)
    np.testing.assert_allclose(bn.running_var.val().numpy(), 0.9 + 0.1 * var, rtol=1e-5)
    ref = (x - mean[None, :, None]) / np.sqrt(var[None, :, None] + 1e-5)
    np.testing.assert_allclose(out.numpy(), ref, atol=1e-5)
    grads = (out * at(rng.normal(size=x.shape))).sum().backward()
    gp = optim.GradientsParams.from_grads(grads, bn)
    assert set(gp.ids()) == {bn.gamma.id, bn.beta.id}
    v = bn.valid()  # inference: the running statistics, no update
    y = v(burn.tensor(x, dtype="float32"))
    rm, rv = 0.1 * mean, 0.9 + 0.1 * var
    np.testing.assert_allclose(
        y.numpy(), (x - rm[None, :, None]) / np.sqrt(rv[None, :, None] + 1e-5), atol=1e-5
    )
    np.testing.assert_allclose(v.running_mean.val().numpy(), rm, rtol=1e-5)


def test_gradient_accumulation_matches_one_big_batch():
    burn.seed(0)
    m = nn.LinearConfig(3, 1).init(ADEV)
    x, y = rng.normal(size=(8, 3)), rng.normal(size=(8, 1))
    full = optim.GradientsParams.from_grads(F.mse_loss(m(at(x)), at(y), reduction="sum").backward(), m)
    acc = optim.GradientsAccumulator()
    for part in (slice(0, 3), slice(3, 8)):
        acc.accumulate(m, F.mse_loss(m(at(x[part])), at(y[part]), reduction="sum").backward())
    summed = acc.grads()
    for pid in full.ids():
        np.testing.assert_allclose(summed.get(pid).numpy(), full.get(pid).numpy(), rtol=1e-5)


def test_cross_entropy_gradient_is_softmax_minus_one_hot():
    logits = rng.normal(size=(4, 3))
    targets = np.array([0, 2, 1, 2])
    x = at(logits).require_grad()
    g = x.grad(F.cross_entropy(x, burn.tensor(targets, device=ADEV)).backward()).numpy()
    e = np.exp(logits - logits.max(1, keepdims=True))
    ref = (e / e.sum(1, keepdims=True) - np.eye(3)[targets]) / 4
    np.testing.assert_allclose(g, ref, atol=1e-6)


def test_mlp_learns_with_adam():
    burn.seed(0)
    model = nn.SequentialConfig([nn.LinearConfig(2, 16), nn.ReluConfig(), nn.LinearConfig(16, 1)]).init(ADEV)
    opt = optim.AdamConfig().init()
    sched = burn.lr_scheduler.ExponentialLrSchedulerConfig(0.02, 0.99).init()
    xs = rng.uniform(-1, 1, size=(64, 2))
    x, y = at(xs), at(xs[:, :1] * xs[:, 1:])  # learn a product: needs the hidden layer
    losses = []
    for _ in range(50):
        loss = F.mse_loss(model(x), y)
        losses.append(loss.item())
        model = opt.step(sched.step(), model, loss.backward())
    assert losses[-1] < 0.5 * losses[0]
    assert F.mse_loss(model.valid()(x.inner()), y.inner()).item() < 0.5 * losses[0]
