"""Seeded random numbers for backends, drawn on the host by default.

``burn.seed(s)`` resets one process-wide numpy Generator; every backend that keeps this default draws
from it, so a seed gives the same numbers on every backend. A GPU backend may override the methods
with device-side generation.
"""

from __future__ import annotations

from typing import Any

from .._dtype import DType

_state: dict[str, Any] = {"seed": None, "rng": None}


def seed(value: int) -> None:
    """Seed every backend's random stream (``burn.seed``)."""
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise ValueError(f"seed: expected a non-negative int, got {value!r}")
    import numpy as np

    _state["seed"] = value
    _state["rng"] = np.random.default_rng(value)


def host_rng() -> Any:
    """The process-wide numpy Generator (seeded from OS entropy until ``burn.seed`` is called)."""
    if _state["rng"] is None:
        import numpy as np

        _state["rng"] = np.random.default_rng()
    return _state["rng"]


class HostRandom:
    """Default random ops: draw with numpy on the host, then ``from_numpy``."""

    def random_uniform(self, shape: tuple[int, ...], low: float, high: float, dtype: DType) -> Any:
        return self.from_numpy(host_rng().uniform(low, high, size=shape), dtype)

    def random_normal(self, shape: tuple[int, ...], mean: float, std: float, dtype: DType) -> Any:
        return self.from_numpy(host_rng().normal(mean, std, size=shape), dtype)

    def random_int(self, shape: tuple[int, ...], low: int, high: int, dtype: DType) -> Any:
        return self.from_numpy(host_rng().integers(low, high, size=shape), dtype)

    def random_bernoulli(self, shape: tuple[int, ...], p: float, dtype: DType) -> Any:
        return self.from_numpy(host_rng().random(size=shape) < p, dtype)
