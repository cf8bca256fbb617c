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
