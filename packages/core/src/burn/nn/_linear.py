"""Linear (a dense layer) and Embedding (a lookup table)."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from ..config import Config, check
from . import functional as F
from ._module import Module
from ._param import Param
from .init import Initializer, KaimingUniform, Normal

if TYPE_CHECKING:
    from .._device import DeviceLike
    from .._tensor import Tensor


class LinearConfig(Config):
    """``LinearConfig(d_input, d_output, bias=True, initializer=KaimingUniform(1/sqrt(3))).init(device)``.

    >>> layer = nn.LinearConfig(4, 2, bias=False).init(burn.device("cpu"))
    >>> layer.weight.shape, layer.bias
    ((4, 2), None)
    """

    d_input: int
    d_output: int
    bias: bool = True
    initializer: Initializer = KaimingUniform(gain=1.0 / math.sqrt(3.0), fan_out_only=False)

    def init(self, device: DeviceLike = None) -> Linear:
        return Linear(self, device)


class Linear(Module):
    """y = x @ weight + bias, weight (d_input, d_output) as in Burn.

    x: (..., d_input) -> (..., d_output).

    >>> nn.LinearConfig(4, 2).init()(burn.ones((3, 4))).shape
    (3, 2)
    """

    def __init__(self, config: LinearConfig, device: DeviceLike = None) -> None:
        check(
            config.d_input > 0 and config.d_output > 0,
            "LinearConfig",
            f"d_input and d_output must be positive, got {config.d_input}, {config.d_output}",
        )
        self.d_input, self.d_output = config.d_input, config.d_output
        fan: dict[str, Any] = {"fan_in": config.d_input, "fan_out": config.d_output, "device": device}
        self.weight = Param(config.initializer.init((config.d_input, config.d_output), **fan))
        self.bias = Param(config.initializer.init((config.d_output,), **fan)) if config.bias else None
        self._config = config

    def forward(self, x: Tensor) -> Tensor:
        return F.linear(x, self.weight.val(), None if self.bias is None else self.bias.val())


class EmbeddingConfig(Config):
    """``EmbeddingConfig(n_embedding, d_model, initializer=Normal(0, 1)).init(device)``.

    >>> nn.EmbeddingConfig(10, 4).init(burn.device("cpu")).weight.shape
    (10, 4)
    """

    n_embedding: int
    d_model: int
    initializer: Initializer = Normal(mean=0.0, std=1.0)

    def init(self, device: DeviceLike = None) -> Embedding:
        return Embedding(self, device)


class Embedding(Module):
    """Rows of ``weight`` (n_embedding, d_model) picked by int indices.

    indices: (...) int -> (..., d_model).

    >>> emb = nn.EmbeddingConfig(10, 4).init()
    >>> emb(burn.tensor([[1, 2, 3], [4, 5, 6]])).shape
    (2, 3, 4)
    """

    def __init__(self, config: EmbeddingConfig, device: DeviceLike = None) -> None:
        check(
            config.n_embedding > 0 and config.d_model > 0,
            "EmbeddingConfig",
            "n_embedding and d_model must be positive",
        )
        self.n_embedding, self.d_model = config.n_embedding, config.d_model
        self.weight = Param(config.initializer.init((config.n_embedding, config.d_model), device=device))
        self._config = config

    def forward(self, indices: Tensor) -> Tensor:
        from .._errors import DTypeError

        if not indices.dtype.is_int:
            raise DTypeError(f"Embedding: indices must be an int tensor, got {indices.dtype}")
        flat = indices.reshape(-1)
        # select (index_select) checks the range and has a simple backward rule (select_add)
        rows = self.weight.val().select(0, flat)
        return rows.reshape(*indices.shape, self.d_model)
