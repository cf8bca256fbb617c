"""API.md, optim, lr_scheduler: the optimizer snippet, clipping, each optimizer and scheduler."""

from __future__ import annotations

import math

import burn
import numpy as np
import pytest
from burn import nn
from burn_api_md._helpers import ADEV, close, rng


def _model_and_grads(seed: int = 0):
    """A Linear(3 -> 2) on the autodiff device and the gradients of a squared loss."""
    burn.seed(seed)
    model = nn.LinearConfig(3, 2).init(ADEV)
    x = burn.tensor(rng(seed).normal(size=(5, 3)).astype(np.float32), device=ADEV)
    loss = (model(x) * model(x)).mean()
    return model, loss.backward(), loss.item(), x


def _weights(model: nn.Module) -> list[np.ndarray]:
    return [p.val().numpy().astype(np.float64) for p in model.params()]


def _grads_of(model: nn.Module, grads: burn.Gradients) -> list[np.ndarray]:
    return [p.val().grad(grads).numpy().astype(np.float64) for p in model.params()]


def test_optimizer_snippet_adam_first_step():
    opt = burn.optim.AdamConfig(
        beta1=0.9, beta2=0.999, epsilon=1e-5, weight_decay=None, grad_clipping=None
    ).init()
    model, grads, _, _ = _model_and_grads()
    before, g = _weights(model), _grads_of(model, grads)
    lr = 0.01
    model = opt.step(lr, model, grads)
    # first Adam step: m_hat = g, v_hat = g^2, so w -= lr * g / (|g| + eps)
    for w0, gi, w1 in zip(before, g, _weights(model)):
        close(w1, w0 - lr * gi / (np.abs(gi) + 1e-5), rtol=1e-5, atol=1e-6)


def test_sgd_clipping_grads_params_and_accumulator():
    model, grads, _, _ = _model_and_grads(1)
    before, g = _weights(model), _grads_of(model, grads)
    clip = burn.optim.GradientClipping.value(0.05)
    opt = burn.optim.SgdConfig(momentum=0.0, nesterov=False, weight_decay=None, grad_clipping=clip).init()
    params = burn.optim.GradientsParams.from_grads(grads, model)
    assert len(params) == 2
    model = opt.step(0.5, model, params)
    for w0, gi, w1 in zip(before, g, _weights(model)):
        close(w1, w0 - 0.5 * np.clip(gi, -0.05, 0.05))

    model, grads, _, x = _model_and_grads(2)
    before, g = _weights(model), _grads_of(model, grads)
    norm_clip = burn.optim.GradientClipping.norm(1e-3)
    model = burn.optim.SgdConfig(grad_clipping=norm_clip).init().step(1.0, model, grads)
    for w0, gi, w1 in zip(before, g, _weights(model)):  # each param's gradient rescaled to norm 1e-3
        assert np.linalg.norm(gi) > 1e-3
        close(w0 - w1, gi * 1e-3 / np.linalg.norm(gi), rtol=1e-3, atol=1e-7)

    accumulator = burn.optim.GradientsAccumulator()
    model, grads_a, _, x = _model_and_grads(3)
    accumulator.accumulate(model, grads_a)
    accumulator.accumulate(model, burn.optim.GradientsParams.from_grads(grads_a, model))
    before, g = _weights(model), _grads_of(model, grads_a)
    model = burn.optim.SgdConfig().init().step(0.1, model, accumulator.grads())
    for w0, gi, w1 in zip(before, g, _weights(model)):
        close(w1, w0 - 0.1 * 2 * gi)


OPTIMIZERS = [
    ("SgdConfig", dict(momentum=0.9, nesterov=True, weight_decay=1e-4)),
    ("AdamConfig", dict(weight_decay=1e-4)),
    ("AdamWConfig", dict(weight_decay=1e-2)),
    ("AdaGradConfig", dict()),
    ("RmsPropConfig", dict(momentum=0.5)),
]


@pytest.mark.parametrize("name, kwargs", OPTIMIZERS, ids=[o[0] for o in OPTIMIZERS])
def test_optimizers_reduce_loss_and_round_trip_records(name, kwargs):
    config = getattr(burn.optim, name)(**kwargs)
    opt = config.init()
    model, grads, loss0, x = _model_and_grads(4)
    for _ in range(5):
        model = opt.step(0.05, model, grads)
        y = model(x)
        grads = (y * y).mean().backward()
    assert (model(x) * model(x)).mean().item() < loss0

    # record / load_record: a fresh optimizer with the saved state takes the same next step
    params = burn.optim.GradientsParams.from_grads(grads, model)
    twin_model = model.clone()  # same param ids, so the same GradientsParams applies
    twin = config.init().load_record(opt.record())
    a = opt.step(0.05, model, params)
    b = twin.step(0.05, twin_model, params)
    for wa, wb in zip(_weights(a), _weights(b)):
        close(wa, wb)


def _cosine(t: int, n: int, lo: float = 0.0, hi: float = 1.0) -> float:
    return lo + (hi - lo) * (1 + math.cos(math.pi * t / n)) / 2


def _noam(t: int) -> float:
    return 4**-0.5 * min(t**-0.5, t * 2**-1.5)


# fmt: off
SCHEDULERS = [
    ("LinearLrSchedulerConfig", dict(initial_lr=0.9, final_lr=0.5, num_iters=4), [0.9, 0.8, 0.7, 0.6, 0.5, 0.5], dict(num_iters=0)),
    ("CosineAnnealingLrSchedulerConfig", dict(initial_lr=1.0, num_iters=4), [_cosine(t, 4) for t in range(5)], dict(initial_lr=-1.0)),
    ("ExponentialLrSchedulerConfig", dict(initial_lr=1.0, gamma=0.5), [1.0, 0.5, 0.25, 0.125], dict(gamma=0.0)),
    ("NoamLrSchedulerConfig", dict(init_lr=1.0, warmup_steps=2, model_size=4), [_noam(t) for t in range(1, 6)], dict(warmup_steps=0)),
    ("StepLrSchedulerConfig", dict(initial_lr=0.1, step_size=2, gamma=0.1), [0.1, 0.1, 0.01, 0.01, 0.001], dict(step_size=0)),
]
# fmt: on


@pytest.mark.parametrize("name, kwargs, lrs, invalid", SCHEDULERS, ids=[s[0] for s in SCHEDULERS])
def test_lr_schedulers(name, kwargs, lrs, invalid):
    config_cls = getattr(burn.lr_scheduler, name)
    sched = config_cls(**kwargs).init()
    steps = [sched.step() for _ in lrs]
    assert all(isinstance(v, float) for v in steps)
    assert steps == pytest.approx(lrs)
    with pytest.raises(burn.ConfigError, match=next(iter(invalid))):
        config_cls(**{**kwargs, **invalid}).init()
    # record / load_record: a fresh scheduler continues where the saved one stopped
    resumed = config_cls(**kwargs).init().load_record(sched.record())
    assert resumed.step() == pytest.approx(sched.step())


def test_step_scheduler_positional_signature_and_constant_lr():
    sched = burn.lr_scheduler.StepLrSchedulerConfig(0.2, 1, 0.5).init()  # (initial_lr, step_size, gamma)
    assert [sched.step() for _ in range(3)] == pytest.approx([0.2, 0.1, 0.05])
    assert burn.lr_scheduler.ConstantLr(0.3).step() == 0.3
