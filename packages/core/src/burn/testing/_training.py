"""A small training run for backend tests: the same model, data and optimizer on any device, so a
fused or in-place path can be compared with plain execution (``losses(fused) ~ losses(plain)``)."""

from __future__ import annotations

from typing import Any

import numpy as np


def small_training(
    device: Any, steps: int = 6, layer_norm: bool = True, lr: float = 1e-2
) -> tuple[list[float], Any]:
    """Train Linear(20, 16) -> ReLU [-> LayerNorm] -> Linear(16, 10) with Adam for ``steps`` steps on
    one fixed batch of 8 (seeded); returns (the loss of each step, the trained model)."""
    import burn
    from burn import nn
    from burn.nn import functional as F

    burn.seed(0)
    layers: list[Any] = [nn.LinearConfig(20, 16).init(device), nn.Relu()]
    if layer_norm:
        layers.append(nn.LayerNormConfig(16).init(device))
    layers.append(nn.LinearConfig(16, 10).init(device))
    model = nn.Sequential(*layers)
    opt = burn.optim.AdamConfig().init()
    rng = np.random.default_rng(0)
    x = burn.tensor(rng.standard_normal((8, 20)).astype(np.float32), device=device)
    y = burn.tensor(rng.integers(0, 10, 8).astype(np.int32), device=device)
    losses = []
    for _ in range(steps):
        loss = F.cross_entropy(model(x), y)
        model = opt.step(lr, model, loss.backward())
        losses.append(loss.item())
    return losses, model
