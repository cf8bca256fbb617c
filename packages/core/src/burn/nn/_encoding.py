"""Position encodings: sinusoidal PositionalEncoding and RotaryEncoding (RoPE). Both hold constant
tensors (moved with the module, not recorded, not trained)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._errors import ShapeError
from ..config import Config, check
from ._module import Module

if TYPE_CHECKING:
    import numpy as np

    from .._device import DeviceLike
    from .._tensor import Tensor


class PositionalEncodingConfig(Config):
    """Builds ``nn.PositionalEncoding``: a (max_sequence_size, d_model) sinusoid table, d_model even.

    >>> nn.PositionalEncodingConfig(d_model=16, max_sequence_size=128).init().sinusoids.shape
    (128, 16)
    """

    d_model: int
    max_sequence_size: int = 5000
    max_timescale: int = 10000

    def init(self, device: DeviceLike = None) -> PositionalEncoding:
        return PositionalEncoding(self, device)


def sinusoids(length: int, d_model: int, max_timescale: float) -> np.ndarray:
    """(length, d_model) table: sin(pos / T^(i/d)) at even i, cos(pos / T^((i-1)/d)) at odd i."""
    import numpy as np

    pos = np.arange(length, dtype=np.float64)[:, None]
    even = np.arange(0, d_model, 2, dtype=np.float64)[None, :]
    angle = pos / np.power(float(max_timescale), even / d_model)
    table = np.empty((length, d_model))
    table[:, 0::2], table[:, 1::2] = np.sin(angle), np.cos(angle)
    return table


class PositionalEncoding(Module):
    """Add the sinusoid table to x: (batch, seq, d_model) -> same, seq <= max_sequence_size.

    >>> pe = nn.PositionalEncodingConfig(d_model=8).init()
    >>> out = pe(burn.zeros((2, 10, 8)))
    >>> out.shape, out[0, 0, :2].tolist()   # position 0: sin(0), cos(0)
    ((2, 10, 8), [0.0, 1.0])
    """

    def __init__(self, config: PositionalEncodingConfig, device: DeviceLike = None) -> None:
        from .._creation import tensor

        check(
            config.d_model > 0 and config.d_model % 2 == 0,
            "PositionalEncodingConfig",
            f"d_model must be positive and even, got {config.d_model}",
        )
        check(config.max_sequence_size > 0, "PositionalEncodingConfig", "max_sequence_size must be positive")
        self.d_model, self.max_sequence_size = config.d_model, config.max_sequence_size
        table = sinusoids(config.max_sequence_size, config.d_model, config.max_timescale)
        self.sinusoids = tensor(table, dtype="float32", device=device)
        self._config = config

    def forward(self, x: Tensor) -> Tensor:
        if x.ndim != 3 or x.shape[2] != self.d_model or x.shape[1] > self.max_sequence_size:
            raise ShapeError(
                f"PositionalEncoding: input must be (batch, seq <= {self.max_sequence_size}, {self.d_model}), got {x.shape}"
            )
        return x + self.sinusoids[: x.shape[1]].cast(x.dtype).unsqueeze(0)


class RotaryEncodingConfig(Config):
    """Builds ``nn.RotaryEncoding`` for positions below ``max_sequence_length``; d_model even.

    >>> nn.RotaryEncodingConfig(max_sequence_length=128, d_model=64).init().cos.shape
    (128, 64)
    """

    max_sequence_length: int
    d_model: int
    theta: float = 10000.0

    def init(self, device: DeviceLike = None) -> RotaryEncoding:
        return RotaryEncoding(self, device)


class RotaryEncoding(Module):
    """Rotate each interleaved pair (x[2i], x[2i+1]) at position p by the angle p * theta^(-2i/d).

    x: (..., seq, d_model) -> same; ``forward(x, start=0)`` starts at position ``start``.

    >>> rope = nn.RotaryEncodingConfig(max_sequence_length=32, d_model=4).init()
    >>> q = burn.ones((2, 8, 4))
    >>> rope(q).shape, rope(q)[0, 0].tolist()   # position 0 is not rotated
    ((2, 8, 4), [1.0, 1.0, 1.0, 1.0])
    """

    def __init__(self, config: RotaryEncodingConfig, device: DeviceLike = None) -> None:
        import numpy as np

        from .._creation import tensor

        d = config.d_model
        check(d > 0 and d % 2 == 0, "RotaryEncodingConfig", f"d_model must be positive and even, got {d}")
        check(config.max_sequence_length > 0, "RotaryEncodingConfig", "max_sequence_length must be positive")
        self.d_model, self.max_sequence_length, self.theta = d, config.max_sequence_length, config.theta
        freqs = config.theta ** (-np.arange(0, d, 2, dtype=np.float64) / d)
        angle = np.arange(config.max_sequence_length, dtype=np.float64)[:, None] * freqs[None, :]
        self.cos = tensor(np.repeat(np.cos(angle), 2, axis=1), dtype="float32", device=device)
        self.sin = tensor(np.repeat(np.sin(angle), 2, axis=1), dtype="float32", device=device)
        # x @ rotate maps each pair (a, b) to (-b, a): one matmul, which every backend differentiates
        rot = np.zeros((d, d))
        for i in range(0, d, 2):
            rot[i + 1, i], rot[i, i + 1] = -1.0, 1.0
        self.rotate = tensor(rot, dtype="float32", device=device)
        self._config = config

    def forward(self, x: Tensor, start: int = 0) -> Tensor:
        if x.ndim < 2 or x.shape[-1] != self.d_model:
            raise ShapeError(f"RotaryEncoding: input must be (..., seq, {self.d_model}), got {x.shape}")
        s = x.shape[-2]
        if start < 0 or start + s > self.max_sequence_length:
            raise ShapeError(
                f"RotaryEncoding: positions {start}..{start + s - 1} exceed max_sequence_length {self.max_sequence_length}"
            )
        cos = self.cos[start : start + s].cast(x.dtype)
        sin = self.sin[start : start + s].cast(x.dtype)
        return x * cos + (x @ self.rotate.cast(x.dtype)) * sin
