"""Initializers (Burn's ``Initializer`` enum): configs whose ``init(shape, fan_in, fan_out, device)``
draws a tensor from the process-wide seeded generator (``burn.seed``).

Fans follow Burn and PyTorch: for a weight whose first two dims are (out, in) with a receptive field
``k`` (the product of the remaining dims), fan_in = in * k and fan_out = out * k; layers pass their own
fans explicitly (Linear's weight is (d_input, d_output): fan_in = d_input).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from ...config import Config, check

if TYPE_CHECKING:
    import numpy as np

    from ..._device import DeviceLike
    from ..._tensor import Tensor


def fans(shape: tuple[int, ...]) -> tuple[int, int]:
    """(fan_in, fan_out) of a weight shaped (out, in, *kernel), as PyTorch computes them.

    >>> nn.init.fans((16, 3, 3, 3))   # (3 * 9, 16 * 9)
    (27, 144)
    """
    if len(shape) < 2:
        return (shape[0] if shape else 1), (shape[0] if shape else 1)
    k = math.prod(shape[2:])
    return shape[1] * k, shape[0] * k


class Initializer(Config, frozen=True):
    """Base class: ``init(shape, fan_in=None, fan_out=None, device=None, dtype=None) -> Tensor``; fans
    default to ``fans(shape)``.

    >>> w = nn.init.XavierUniform().init((3, 4), device=burn.device("cpu"))
    >>> w.shape, w.dtype
    ((3, 4), burn.float32)
    """

    def init(
        self,
        shape: tuple[int, ...],
        fan_in: int | None = None,
        fan_out: int | None = None,
        device: DeviceLike = None,
        dtype: Any = None,
    ) -> Tensor:
        from ..._creation import tensor

        shape = tuple(int(s) for s in shape)
        values = self._sample(shape, fan_in, fan_out)
        return tensor(values, dtype=dtype or "float32", device=device)

    def _sample(self, shape: tuple[int, ...], fan_in: int | None, fan_out: int | None) -> np.ndarray:
        raise NotImplementedError

    def _fan(self, shape: tuple[int, ...], fan_in: int | None, fan_out: int | None, out_only: bool) -> int:
        default_in, default_out = fans(shape)
        fan = (fan_out or default_out) if out_only else (fan_in or default_in)
        check(fan > 0, type(self).__name__, f"fan must be positive, got {fan} for shape {shape}")
        return fan


def _rng() -> np.random.Generator:
    from ...backend._random import host_rng

    return host_rng()


class Constant(Initializer, frozen=True):
    """Every element ``value``.

    >>> nn.init.Constant(0.5).init((2, 2)).tolist()
    [[0.5, 0.5], [0.5, 0.5]]
    """

    value: float = 0.0

    def _sample(self, shape: tuple[int, ...], fan_in: int | None, fan_out: int | None) -> np.ndarray:
        import numpy as np

        return np.full(shape, self.value, dtype=np.float64)


class Ones(Initializer, frozen=True):
    """Every element 1.

    >>> nn.init.Ones().init((3,)).tolist()
    [1.0, 1.0, 1.0]
    """

    def _sample(self, shape: tuple[int, ...], fan_in: int | None, fan_out: int | None) -> np.ndarray:
        import numpy as np

        return np.ones(shape)


class Zeros(Initializer, frozen=True):
    """Every element 0.

    >>> nn.init.Zeros().init((1, 2)).tolist()
    [[0.0, 0.0]]
    """

    def _sample(self, shape: tuple[int, ...], fan_in: int | None, fan_out: int | None) -> np.ndarray:
        import numpy as np

        return np.zeros(shape)


class Uniform(Initializer, frozen=True):
    """U(min, max).

    >>> w = nn.init.Uniform(2.0, 3.0).init((100,))
    >>> 2.0 <= w.min().item() and w.max().item() <= 3.0
    True
    """

    min: float = 0.0
    max: float = 1.0

    def _sample(self, shape: tuple[int, ...], fan_in: int | None, fan_out: int | None) -> np.ndarray:
        check(self.min <= self.max, "Uniform", f"min ({self.min}) must be <= max ({self.max})")
        return _rng().uniform(self.min, self.max, size=shape)


class Normal(Initializer, frozen=True):
    """N(mean, std).

    >>> round(nn.init.Normal(mean=5.0, std=0.1).init((1000,)).mean().item())
    5
    """

    mean: float = 0.0
    std: float = 1.0

    def _sample(self, shape: tuple[int, ...], fan_in: int | None, fan_out: int | None) -> np.ndarray:
        check(self.std >= 0, "Normal", f"std must be non-negative, got {self.std}")
        return _rng().normal(self.mean, self.std, size=shape)


class KaimingUniform(Initializer, frozen=True):
    """U(-a, a) with a = gain * sqrt(3 / fan). Burn's Linear default is gain = 1/sqrt(3), fan_in
    (the PyTorch Linear default bound 1/sqrt(fan_in)).

    >>> w = nn.init.KaimingUniform(gain=1.0).init((64, 3), fan_in=3)   # a = sqrt(3 / 3)
    >>> w.abs().max().item() <= 1.0
    True
    """

    gain: float = 1.0 / math.sqrt(3.0)
    fan_out_only: bool = False

    def _sample(self, shape: tuple[int, ...], fan_in: int | None, fan_out: int | None) -> np.ndarray:
        a = self.gain * math.sqrt(3.0 / self._fan(shape, fan_in, fan_out, self.fan_out_only))
        return _rng().uniform(-a, a, size=shape)


class KaimingNormal(Initializer, frozen=True):
    """N(0, std) with std = gain / sqrt(fan) (fan_out with ``fan_out_only``).

    >>> w = nn.init.KaimingNormal().init((256, 512), fan_in=512)   # std = sqrt(2) / sqrt(512)
    >>> abs(w.std().item() - 0.0625) < 0.002
    True
    """

    gain: float = math.sqrt(2.0)
    fan_out_only: bool = False

    def _sample(self, shape: tuple[int, ...], fan_in: int | None, fan_out: int | None) -> np.ndarray:
        std = self.gain / math.sqrt(self._fan(shape, fan_in, fan_out, self.fan_out_only))
        return _rng().normal(0.0, std, size=shape)


def _xavier_fans(
    self: Initializer, shape: tuple[int, ...], fan_in: int | None, fan_out: int | None
) -> tuple[int, int]:
    d_in, d_out = fans(shape)
    fi, fo = fan_in or d_in, fan_out or d_out
    check(fi + fo > 0, type(self).__name__, f"fan_in + fan_out must be positive for shape {shape}")
    return fi, fo


class XavierUniform(Initializer, frozen=True):
    """U(-a, a) with a = gain * sqrt(6 / (fan_in + fan_out)).

    >>> w = nn.init.XavierUniform().init((3, 3))   # fans (3, 3): a = 1
    >>> w.abs().max().item() <= 1.0
    True
    """

    gain: float = 1.0

    def _sample(self, shape: tuple[int, ...], fan_in: int | None, fan_out: int | None) -> np.ndarray:
        fi, fo = _xavier_fans(self, shape, fan_in, fan_out)
        a = self.gain * math.sqrt(6.0 / (fi + fo))
        return _rng().uniform(-a, a, size=shape)


class XavierNormal(Initializer, frozen=True):
    """N(0, std) with std = gain * sqrt(2 / (fan_in + fan_out)).

    >>> w = nn.init.XavierNormal().init((200, 300))   # std = sqrt(2 / 500)
    >>> abs(w.std().item() - 0.0632) < 0.002
    True
    """

    gain: float = 1.0

    def _sample(self, shape: tuple[int, ...], fan_in: int | None, fan_out: int | None) -> np.ndarray:
        fi, fo = _xavier_fans(self, shape, fan_in, fan_out)
        return _rng().normal(0.0, self.gain * math.sqrt(2.0 / (fi + fo)), size=shape)


class Orthogonal(Initializer, frozen=True):
    """A (semi-)orthogonal matrix of shape (rows, prod(rest)) times ``gain`` (Saxe et al.), from the QR
    decomposition of a Gaussian matrix with the signs of R's diagonal folded in (a Haar sample).

    >>> q = nn.init.Orthogonal().init((4, 4)).numpy()
    >>> np.allclose(q @ q.T, np.eye(4), atol=1e-5)
    True
    """

    gain: float = 1.0

    def _sample(self, shape: tuple[int, ...], fan_in: int | None, fan_out: int | None) -> np.ndarray:
        import numpy as np

        check(len(shape) >= 2, "Orthogonal", f"needs a shape with at least 2 dims, got {shape}")
        rows, cols = shape[0], math.prod(shape[1:])
        flat = _rng().normal(0.0, 1.0, size=(rows, cols))
        if rows < cols:
            flat = flat.T
        q, r = np.linalg.qr(flat)
        q = q * np.sign(np.diag(r))
        if rows < cols:
            q = q.T
        return (self.gain * q).reshape(shape)
