"""Each optimizer's updates over a few steps against its published rule written in numpy, with
hand-built GradientsParams on the plain cpu device (no autodiff needed)."""

import math

import burn
import numpy as np
import pytest
from burn import nn, optim

rng = np.random.default_rng(2)
W0 = rng.normal(size=(3, 2))
GRADS = [rng.normal(size=(3, 2)) for _ in range(4)]
LR = 0.05


def run(config, lr=LR, grads=GRADS):
    model = nn.LinearConfig(3, 2, bias=False).init()
    model.load_record({"weight": W0})
    opt = config.init()
    history = []
    for g in grads:
        gp = optim.GradientsParams()
        gp.register(model.weight.id, burn.tensor(g, dtype="float32"))
        model = opt.step(lr, model, gp)
        history.append(model.weight.val().numpy().astype(np.float64))
    return history, opt, model


def check(history, ref, rtol=1e-5, atol=1e-6):
    for got, want in zip(history, ref):
        np.testing.assert_allclose(got, want, rtol=rtol, atol=atol)


def np_sgd(momentum=0.0, dampening=0.0, nesterov=False, wd=0.0):
    w, buf, out = W0.copy(), None, []
    for g in GRADS:
        g = g + wd * w
        if momentum:
            buf = g if buf is None else momentum * buf + (1 - dampening) * g
            g = g + momentum * buf if nesterov else buf
        w = w - LR * g
        out.append(w)
    return out


@pytest.mark.parametrize(
    "kwargs",
    [
        {},
        {"momentum": 0.9},
        {"momentum": 0.9, "dampening": 0.1},
        {"momentum": 0.8, "nesterov": True},
        {"weight_decay": 0.1},
    ],
)
def test_sgd(kwargs):
    hist, _, _ = run(optim.SgdConfig(**kwargs))
    ref = np_sgd(
        kwargs.get("momentum", 0.0),
        kwargs.get("dampening", 0.0),
        kwargs.get("nesterov", False),
        kwargs.get("weight_decay", 0.0),
    )
    check(hist, ref)


def np_adam(b1=0.9, b2=0.999, eps=1e-5, wd=0.0, decoupled=False):
    """Kingma & Ba, Algorithm 1; AdamW per Loshchilov & Hutter (decay scaled by lr, as PyTorch)."""
    w, m, v, out = W0.copy(), 0.0, 0.0, []
    for t, g in enumerate(GRADS, start=1):
        if wd and not decoupled:
            g = g + wd * w
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * g * g
        upd = (m / (1 - b1**t)) / (np.sqrt(v / (1 - b2**t)) + eps)
        w = (w * (1 - LR * wd) if decoupled else w) - LR * upd
        out.append(w)
    return out


def test_adam_and_adamw():
    check(run(optim.AdamConfig())[0], np_adam())
    check(
        run(optim.AdamConfig(beta1=0.8, beta2=0.99, epsilon=1e-8, weight_decay=0.05))[0],
        np_adam(0.8, 0.99, 1e-8, 0.05),
    )
    check(run(optim.AdamWConfig(weight_decay=0.1))[0], np_adam(wd=0.1, decoupled=True))


def test_adagrad():
    for lr_decay in (0.0, 0.1):
        w, s, ref = W0.copy(), 0.0, []
        for t, g in enumerate(GRADS, start=1):
            s = s + g * g
            w = w - LR / (1 + (t - 1) * lr_decay) * g / (np.sqrt(s) + 1e-5)
            ref.append(w)
        check(run(optim.AdaGradConfig(lr_decay=lr_decay))[0], ref)


@pytest.mark.parametrize("centered, momentum", [(False, 0.0), (True, 0.0), (False, 0.9), (True, 0.5)])
def test_rmsprop(centered, momentum):
    alpha, eps = 0.9, 1e-6
    w, sq, ga, buf, ref = W0.copy(), np.zeros_like(W0), np.zeros_like(W0), np.zeros_like(W0), []
    for g in GRADS:
        sq = alpha * sq + (1 - alpha) * g * g
        avg = sq
        if centered:
            ga = alpha * ga + (1 - alpha) * g
            avg = sq - ga * ga
        step = g / (np.sqrt(avg) + eps)
        if momentum:
            buf = momentum * buf + step
            step = buf
        w = w - LR * step
        ref.append(w)
    hist, _, _ = run(optim.RmsPropConfig(alpha=alpha, epsilon=eps, centered=centered, momentum=momentum))
    check(hist, ref, rtol=1e-4, atol=1e-5)


def test_gradient_clipping_by_value_and_norm():
    big = [g * 10 for g in GRADS[:2]]
    hist, _, _ = run(optim.SgdConfig(grad_clipping=optim.GradientClipping.value(0.5)), grads=big)
    w = W0.copy()
    for g in big:
        w = w - LR * np.clip(g, -0.5, 0.5)
    np.testing.assert_allclose(hist[-1], w, rtol=1e-5)
    hist, _, _ = run(optim.SgdConfig(grad_clipping=optim.GradientClipping.norm(1.0)), grads=big)
    w = W0.copy()
    for g in big:
        n = np.linalg.norm(g)
        w = w - LR * (g * (1.0 / (n + 1e-6)) if n > 1.0 else g)
    np.testing.assert_allclose(hist[-1], w, rtol=1e-5)
    with pytest.raises(burn.ConfigError, match="threshold"):
        optim.GradientClipping.norm(-1)


def test_state_record_round_trip_resumes_exactly():
    full, _, _ = run(optim.AdamConfig())
    model = nn.LinearConfig(3, 2, bias=False).init()
    model.load_record({"weight": W0})
    opt = optim.AdamConfig().init()
    for g in GRADS[:2]:
        gp = optim.GradientsParams({model.weight.id: burn.tensor(g, dtype="float32")})
        model = opt.step(LR, model, gp)
    saved, weights, ids = opt.record(), model.record(), model.param_ids()
    assert saved["states"][model.weight.id]["time"] == 2
    assert isinstance(saved["states"][model.weight.id]["moment_1"], np.ndarray)
    # a fresh model and optimizer, restored, continue where the first left off
    model2 = nn.LinearConfig(3, 2, bias=False).init().load_record(weights, ids=ids)
    opt2 = optim.AdamConfig().init().load_record(saved)
    for g in GRADS[2:]:
        gp = optim.GradientsParams({model2.weight.id: burn.tensor(g, dtype="float32")})
        model2 = opt2.step(LR, model2, gp)
    np.testing.assert_allclose(model2.weight.val().numpy(), full[-1], rtol=1e-6)
    with pytest.raises(burn.RecordError, match="optimizer 'Adam'"):
        optim.SgdConfig().init().load_record(saved)
    with pytest.raises(burn.RecordError, match="keys"):
        optim.AdamConfig().init().load_record({"optimizer": "Adam", "states": {"x": {"time": 1}}})


def test_accumulator_sums_and_resets():
    model = nn.LinearConfig(3, 2, bias=False).init()
    acc = optim.GradientsAccumulator()
    for g in GRADS[:3]:
        acc.accumulate(model, optim.GradientsParams({model.weight.id: burn.tensor(g, dtype="float32")}))
    assert acc.count == 3
    total = acc.grads()
    np.testing.assert_allclose(total.get(model.weight.id).numpy(), sum(GRADS[:3]), rtol=1e-5)
    assert len(acc.grads()) == 0


def test_step_errors_and_frozen_params():
    model = nn.LinearConfig(3, 2, bias=False).init()
    opt = optim.SgdConfig().init()
    with pytest.raises(burn.ConfigError, match="lr"):
        opt.step(-1.0, model, optim.GradientsParams())
    with pytest.raises(burn.ShapeError, match="weight"):
        opt.step(0.1, model, optim.GradientsParams({model.weight.id: burn.ones((2, 2))}))
    before = model.weight.val().numpy()
    model.weight.set_require_grad(False)
    opt.step(0.1, model, optim.GradientsParams({model.weight.id: burn.ones((3, 2))}))
    assert np.array_equal(model.weight.val().numpy(), before)
    with pytest.raises(burn.ConfigError, match="nesterov"):
        optim.SgdConfig(nesterov=True).init()
    with pytest.raises(burn.ConfigError, match="beta1"):
        optim.AdamConfig(beta1=1.0).init()
    with pytest.raises(TypeError, match="Gradients"):
        optim.GradientsParams.from_grads({}, model)


def test_optimizer_configs_serialise_with_clipping():
    c = optim.AdamWConfig(weight_decay=0.01, grad_clipping=optim.GradientClipping.value(2.0))
    assert optim.AdamWConfig.from_json(c.to_json()) == c
    assert math.isclose(c.init().config.weight_decay, 0.01)


def test_a_bad_gradient_changes_no_param():
    """Every param's gradient is checked before any param is updated: a wrong shape on the last param,
    a model param off autodiff, or grads that are not a burn.Gradients leave the model as it was."""
    dev = burn.device("cpu", autodiff=True)
    model = nn.LinearConfig(3, 2).init(dev)
    opt = optim.AdamConfig().init()
    before = [p.val().inner().numpy().copy() for p in model.params()]
    bad = optim.GradientsParams({model.weight.id: burn.ones((3, 2)), model.bias.id: burn.ones((5,))})
    with pytest.raises(burn.ShapeError, match="bias"):
        opt.step(0.1, model, bad)
    with pytest.raises(TypeError, match="burn.Gradients"):
        opt.step(0.1, model, {"weight": burn.ones((3, 2))})
    for p, b in zip(model.params(), before):
        np.testing.assert_array_equal(p.val().inner().numpy(), b)
    host = nn.LinearConfig(3, 2).init()  # params on a device without autodiff
    grads = model(burn.ones((4, 3), device=dev)).sum().backward()
    with pytest.raises(burn.DeviceError, match="autodiff"):
        opt.step(0.1, host, grads)
    # a burn.Gradients steps a model exactly as the GradientsParams built from it
    stepped = []
    for by_id in (False, True):
        burn.seed(7)
        m = nn.LinearConfig(3, 2).init(dev)
        g = m(burn.ones((4, 3), device=dev)).square().sum().backward()
        m = optim.AdamConfig().init().step(0.1, m, optim.GradientsParams.from_grads(g, m) if by_id else g)
        stepped.append([p.val().inner().numpy() for p in m.params()])
    for a, b in zip(*stepped):
        np.testing.assert_array_equal(a, b)
