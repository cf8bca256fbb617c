"""TransformerEncoder: a stack of self-attention + position-wise feed-forward layers."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from ..config import Config, check
from . import functional as F
from ._attention import MultiHeadAttentionConfig
from ._dropout import Dropout
from ._linear import LinearConfig
from ._module import Module
from ._norm import LayerNormConfig
from .init import Initializer, KaimingUniform

if TYPE_CHECKING:
    from .._device import DeviceLike
    from .._tensor import Tensor


class TransformerEncoderConfig(Config):
    """Builds ``nn.TransformerEncoder``: ``n_layers`` layers of ``n_heads``-head self-attention and a
    d_model -> d_ff -> d_model feed-forward block; ``norm_first`` selects pre-norm.

    >>> enc = nn.TransformerEncoderConfig(16, d_ff=32, n_heads=4, n_layers=3, norm_first=True).init()
    >>> len(enc.layers), enc.layers[0].norm_first
    (3, True)
    """

    d_model: int
    d_ff: int
    n_heads: int
    n_layers: int
    dropout: float = 0.1
    norm_first: bool = False
    quiet_softmax: bool = False
    layer_norm_eps: float = 1e-5
    initializer: Initializer = KaimingUniform(gain=1.0 / math.sqrt(3.0), fan_out_only=False)

    def init(self, device: DeviceLike = None) -> TransformerEncoder:
        return TransformerEncoder(self, device)


class PositionWiseFeedForward(Module):
    """linear (d_model -> d_ff), gelu, dropout, linear (d_ff -> d_model)."""

    def __init__(self, config: TransformerEncoderConfig, device: DeviceLike = None) -> None:
        self.linear_inner = LinearConfig(config.d_model, config.d_ff, True, config.initializer).init(device)
        self.linear_outer = LinearConfig(config.d_ff, config.d_model, True, config.initializer).init(device)
        self.dropout = Dropout(config.dropout)

    def forward(self, x: Tensor) -> Tensor:
        return self.linear_outer(self.dropout(F.gelu(self.linear_inner(x))))


class TransformerEncoderLayer(Module):
    """Post-norm: x = norm_1(x + drop(mha(x))); x = norm_2(x + drop(pwff(x))). Pre-norm (norm_first)
    normalises the input of each sub-layer instead. x: (batch, seq, d_model) -> same shape.

    >>> layer = nn.TransformerEncoderLayer(nn.TransformerEncoderConfig(16, 32, 4, 1), burn.device("cpu"))
    >>> layer(burn.randn((1, 3, 16)), mask_pad=burn.tensor([[False, False, True]])).shape
    (1, 3, 16)
    """

    def __init__(self, config: TransformerEncoderConfig, device: DeviceLike = None) -> None:
        self.mha = MultiHeadAttentionConfig(
            config.d_model,
            config.n_heads,
            config.dropout,
            quiet_softmax=config.quiet_softmax,
            initializer=config.initializer,
        ).init(device)
        self.pwff = PositionWiseFeedForward(config, device)
        norm = LayerNormConfig(config.d_model, config.layer_norm_eps)
        self.norm_1, self.norm_2 = norm.init(device), norm.init(device)
        self.dropout = Dropout(config.dropout)
        self.norm_first = config.norm_first

    def _attend(self, x: Tensor, mask_pad: Tensor | None, mask_attn: Tensor | None, causal: bool) -> Tensor:
        # no weights asked for: the fused attention op where the module allows it
        return self.mha(x, mask_pad=mask_pad, mask_attn=mask_attn, causal=causal, need_weights=False).context

    def forward(
        self, x: Tensor, mask_pad: Tensor | None = None, mask_attn: Tensor | None = None, causal: bool = False
    ) -> Tensor:
        if self.norm_first:
            h = self.norm_1(x)
            x = x + self.dropout(self._attend(h, mask_pad, mask_attn, causal))
            return x + self.dropout(self.pwff(self.norm_2(x)))
        attn = self._attend(x, mask_pad, mask_attn, causal)
        x = self.norm_1(x + self.dropout(attn))
        return self.norm_2(x + self.dropout(self.pwff(x)))


class TransformerEncoder(Module):
    """x: (batch, seq, d_model), optional mask_pad (batch, seq) / mask_attn (batch, seq, seq) bool ->
    (batch, seq, d_model). ``causal=True``: each position attends to itself and earlier ones only (a
    decoder-only model such as GPT-2), without building a (batch, seq, seq) mask.

    >>> enc = nn.TransformerEncoderConfig(d_model=16, d_ff=32, n_heads=4, n_layers=2).init()
    >>> enc(burn.randn((2, 5, 16))).shape
    (2, 5, 16)
    """

    def __init__(self, config: TransformerEncoderConfig, device: DeviceLike = None) -> None:
        check(
            config.n_layers > 0,
            "TransformerEncoderConfig",
            f"n_layers must be positive, got {config.n_layers}",
        )
        check(config.d_ff > 0, "TransformerEncoderConfig", f"d_ff must be positive, got {config.d_ff}")
        self.d_model, self.n_layers = config.d_model, config.n_layers
        self.layers = [TransformerEncoderLayer(config, device) for _ in range(config.n_layers)]
        self._config = config

    def forward(
        self, x: Tensor, mask_pad: Tensor | None = None, mask_attn: Tensor | None = None, causal: bool = False
    ) -> Tensor:
        for layer in self.layers:
            x = layer(x, mask_pad, mask_attn, causal)
        return x
