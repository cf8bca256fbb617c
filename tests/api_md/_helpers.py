"""Helpers shared by the API.md checks: the devices, ``close`` (the comparison every value check uses),
a seeded ``rng``, numpy references needed by more than one section, and ``_Net`` (used by the nn and
record sections).

Values are compared with an independent numpy formulation (float32 results against float64
references: rtol 1e-5, atol 1e-6 unless a row says otherwise).
"""

from __future__ import annotations

import math

import burn
import numpy as np
from burn import nn

CPU = burn.device("cpu")
ADEV = burn.device("cpu", autodiff=True)
RTOL, ATOL = 1e-5, 1e-6


def close(got: object, want: object, rtol: float = RTOL, atol: float = ATOL) -> None:
    """``got`` (a tensor or array) equals ``want`` in shape and values."""
    got = got.numpy() if isinstance(got, burn.Tensor) else np.asarray(got)
    want = np.asarray(want)
    assert got.shape == want.shape, f"shape {got.shape} != {want.shape}"
    np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=rtol, atol=atol)


def rng(seed: int = 0) -> np.random.Generator:
    return np.random.default_rng(seed)


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-x))


def _gelu(x: np.ndarray) -> np.ndarray:
    return 0.5 * x * (1.0 + np.vectorize(math.erf)(x / math.sqrt(2.0)))


def _layer_norm(x: np.ndarray, axes: tuple[int, ...], eps: float = 1e-5) -> np.ndarray:
    mean = x.mean(axes, keepdims=True)
    return (x - mean) / np.sqrt(x.var(axes, keepdims=True) + eps)


def _log_softmax(x: np.ndarray, axis: int = -1) -> np.ndarray:
    x = x.astype(np.float64)
    m = x.max(axis, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(axis, keepdims=True))


class _Net(nn.Module):
    """Params found in attributes, lists and dicts; a batch norm and a dropout."""

    def __init__(self, device: object) -> None:
        self.fc = nn.LinearConfig(3, 4).init(device)
        self.blocks = [nn.LinearConfig(4, 4).init(device)]
        self.heads = {"out": nn.LinearConfig(4, 2).init(device)}
        self.norm = nn.BatchNormConfig(4).init(device)
        self.drop = nn.DropoutConfig(0.5).init(device)

    def forward(self, x: burn.Tensor) -> burn.Tensor:
        h = self.drop(self.norm(self.fc(x).unsqueeze(-1)).squeeze(-1))
        return self.heads["out"](self.blocks[0](h))
