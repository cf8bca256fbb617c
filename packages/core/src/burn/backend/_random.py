"""Seeded random numbers for backends, drawn on the host by default.

``burn.seed(s)`` resets one process-wide numpy Generator; every backend that keeps this default draws
from it, so a seed gives the same numbers on every backend. A GPU backend may override the methods
with device-side generation.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .._dtype import DType

if TYPE_CHECKING:
    import numpy as np

_state: dict[str, Any] = {"seed": None, "rng": None}


def seed(value: int) -> None:
    """Seed every backend's random stream (``burn.seed``): the same seed gives the same samples.

    >>> burn.seed(0)
    >>> a = burn.rand(3).tolist()
    >>> burn.seed(0)
    >>> burn.rand(3).tolist() == a
    True
    """
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise ValueError(f"seed: expected a non-negative int, got {value!r}")
    import numpy as np

    _state["seed"] = value
    _state["rng"] = np.random.default_rng(value)


def host_rng() -> np.random.Generator:
    """The process-wide numpy Generator (seeded from OS entropy until ``burn.seed`` is called)."""
    if _state["rng"] is None:
        import numpy as np

        _state["rng"] = np.random.default_rng()
    return _state["rng"]


class HostRandom:
    """Default random ops: draw with numpy on the host, then ``from_numpy``."""

    if TYPE_CHECKING:  # a base of Backend, which provides it

        def from_numpy(self, array: np.ndarray, dtype: DType) -> Any: ...

    def random_uniform(self, shape: tuple[int, ...], low: float, high: float, dtype: DType) -> Any:
        return self.from_numpy(host_rng().uniform(low, high, size=shape), dtype)

    def random_normal(self, shape: tuple[int, ...], mean: float, std: float, dtype: DType) -> Any:
        return self.from_numpy(host_rng().normal(mean, std, size=shape), dtype)

    def random_int(self, shape: tuple[int, ...], low: int, high: int, dtype: DType) -> Any:
        return self.from_numpy(host_rng().integers(low, high, size=shape), dtype)

    def random_bernoulli(self, shape: tuple[int, ...], p: float, dtype: DType) -> Any:
        return self.from_numpy(host_rng().random(size=shape) < p, dtype)
