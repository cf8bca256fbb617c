"""A small training run for backend tests: the same model, data and optimizer on any device, so a
fused or in-place path can be compared with plain execution (``losses(fused) ~ losses(plain)``)."""

from __future__ import annotations

from typing import Any

import numpy as np


def small_training(
    device: Any,
    steps: int = 6,
    layer_norm: bool = True,
    lr: float = 1e-2,
    widths: tuple[int, ...] = (20, 16, 10),
    batch: int = 8,
) -> tuple[list[float], Any]:
    """Train an MLP of ``widths`` (Linear -> ReLU [-> LayerNorm] per hidden layer, then a Linear to
    the classes) with Adam for ``steps`` steps on one fixed ``batch`` (seeded); returns (the loss of
    each step, the trained model)."""
    import burn
    from burn import nn
    from burn.nn import functional as F

    burn.seed(0)
    layers: list[Any] = []
    for a, b in zip(widths[:-2], widths[1:-1]):
        layers += [nn.LinearConfig(a, b).init(device), nn.Relu()]
        if layer_norm:
            layers.append(nn.LayerNormConfig(b).init(device))
    layers.append(nn.LinearConfig(widths[-2], widths[-1]).init(device))
    model = nn.Sequential(*layers)
    opt = burn.optim.AdamConfig().init()
    rng = np.random.default_rng(0)
    x = burn.tensor(rng.standard_normal((batch, widths[0])).astype(np.float32), device=device)
    y = burn.tensor(rng.integers(0, widths[-1], batch).astype(np.int32), device=device)
    losses = []
    for _ in range(steps):
        loss = F.cross_entropy(model(x), y)
        model = opt.step(lr, model, loss.backward())
        losses.append(loss.item())
    return losses, model


def conv_training_losses(
    device: Any,
    steps: int,
    dropout: float,
    read_every: int,
    image: int = 8,
    hidden: int = 32,
    decay: bool = False,
) -> list[float]:
    """Train a small CNN (conv 1->4, ReLU, Linear to ``hidden``, ReLU, [dropout], Linear to 5 classes)
    with Adam on one fixed batch of six ``image`` x ``image`` images; the losses of every step. Each loss
    is held until the end (a graph launch must not overwrite a value a tensor still holds) and read
    every ``read_every`` steps (0: never before the end). ``decay``: the learning rate changes every
    step (1e-2 / (1 + step)), so a recorded program's scalars change between launches."""
    import burn
    from burn import nn
    from burn.nn import functional as F

    burn.seed(0)

    class Net(nn.Module):
        def __init__(self) -> None:
            self.c = nn.Conv2dConfig((1, 4), 3, padding=1).init(device)
            self.l1 = nn.LinearConfig(4 * image * image, hidden).init(device)
            self.l2 = nn.LinearConfig(hidden, 5).init(device)

        def forward(self, x: Any) -> Any:
            h = F.relu(self.c(x)).flatten(1, 3)
            h = F.relu(self.l1(h))
            return self.l2(F.dropout(h, dropout) if dropout else h)

    model, opt = Net(), burn.optim.AdamConfig().init()
    rng = np.random.default_rng(0)
    x = burn.tensor(rng.standard_normal((6, 1, image, image)).astype(np.float32), device=device)
    y = burn.tensor(rng.integers(0, 5, 6).astype(np.int32), device=device)
    held = []
    for i in range(steps):
        loss = F.cross_entropy(model(x), y)
        model = opt.step(1e-2 / (1 + i) if decay else 1e-2, model, loss.backward())
        held.append(loss)
        if read_every and i % read_every == 0:
            loss.item()
    return [float(v.item()) for v in held]


def fresh_programs(fusion_backend: Any, monkeypatch: Any) -> None:
    """Make a fusion backend plan (and capture) anew for one test: its kept programs are emptied for the
    test's duration (pytest's ``monkeypatch`` restores them)."""
    for name in ("_programs", "_lengths"):
        monkeypatch.setattr(fusion_backend, name, type(getattr(fusion_backend, name))())


def two_output_plan(n: int) -> Any:
    """A ``FusedKernel`` over (n,) float32 inputs in0, in1 with two outputs, exp(in0) * in1 and
    in0 + in1: the plan the in-place (donated input) tests run."""
    import burn
    from burn.fusion import FusedKernel, FusedOp

    f32 = burn.float32
    ops = (
        FusedOp("unary", "exp", f32, f32, (0,)),
        FusedOp("binary", "mul", f32, f32, (2, 1)),
        FusedOp("binary", "add", f32, f32, (0, 1)),
    )
    return FusedKernel((n,), (f32, f32), (), ops, (3, 4))


def inference_loop_with_new_weights(device: Any, steps: int = 12, new_weights_at: int = 8) -> dict[str, int]:
    """An inference loop ``relu(x @ w * 0.5).sum(1)`` over fresh inputs on a fused ``device``, one
    ``mark_step`` per step, whose weights are replaced at step ``new_weights_at`` (another tensor behind
    the same kind of stream); every step checked against numpy. Returns how much each of the fusion
    backend's ``stats`` counters grew (the tests assert graphs were captured and launched)."""
    import burn

    fb = device.backend
    rng = np.random.default_rng(3)
    w_np = rng.standard_normal((16, 8)).astype(np.float32)
    w = burn.tensor(w_np, device=device)
    before = dict(fb.stats)
    for i in range(steps):
        if i == new_weights_at:
            w_np = w_np * 2.0
            w = burn.tensor(w_np, device=device)
        x_np = rng.standard_normal((4, 16)).astype(np.float32)
        y = ((burn.tensor(x_np, device=device) @ w) * 0.5).relu().sum(1)
        burn.fusion.mark_step(device)
        np.testing.assert_allclose(y.numpy(), np.maximum(x_np @ w_np * 0.5, 0).sum(1), rtol=1e-4, atol=1e-4)
    return {k: v - before.get(k, 0) for k, v in fb.stats.items()}
