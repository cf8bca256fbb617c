"""Multi-head attention (Burn's MultiHeadAttention, "Attention Is All You Need")."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, NamedTuple

from .._errors import DTypeError, ShapeError
from ..config import Config, check
from . import functional as F
from ._dropout import Dropout
from ._linear import LinearConfig
from ._module import Module
from .init import Initializer, KaimingUniform

if TYPE_CHECKING:
    from .._device import DeviceLike
    from .._tensor import Tensor


# masked scores at or below this weigh exp(-1e4) = 0 in float32 softmax, as leaving the keys out does
_FUSED_MIN_FLOAT = -1.0e4


class MhaOutput(NamedTuple):
    """context (batch, seq_q, d_model) and attention weights (batch, n_heads, seq_q, seq_k); weights is
    None when the call asked for none (``need_weights=False``).

    >>> mha = nn.MultiHeadAttentionConfig(8, 2).init()
    >>> context, weights = mha(burn.zeros((1, 3, 8)), burn.zeros((1, 4, 8)))   # 3 queries, 4 keys
    >>> context.shape, weights.shape
    ((1, 3, 8), (1, 2, 3, 4))
    """

    context: Tensor
    weights: Tensor | None


class MultiHeadAttentionConfig(Config):
    """Builds ``nn.MultiHeadAttention``: ``d_model`` split over ``n_heads`` heads (d_model % n_heads == 0),
    ``dropout`` on the attention weights, masked scores set to ``min_float``, ``quiet_softmax`` adds a
    zero logit so a head may attend to nothing.

    >>> nn.MultiHeadAttentionConfig(d_model=16, n_heads=4, dropout=0.0).init().d_k
    4
    """

    d_model: int
    n_heads: int
    dropout: float = 0.1
    min_float: float = -1.0e4
    quiet_softmax: bool = False
    initializer: Initializer = KaimingUniform(gain=1.0 / math.sqrt(3.0), fan_out_only=False)

    def init(self, device: DeviceLike = None) -> MultiHeadAttention:
        return MultiHeadAttention(self, device)


def quiet_softmax(x: Tensor, dim: int) -> Tensor:
    """softmax with an extra zero logit: exp(x_i) / (1 + sum_j exp(x_j)), computed stably, so a
    head can attend to nothing."""
    m = x.max(dim, keepdim=True).detach().clamp_min(0.0)
    e = (x - m).exp()
    return e / (e.sum(dim, keepdim=True) + (-m).exp())


class MultiHeadAttention(Module):
    """``mha(query, key=None, value=None, mask_pad=None, mask_attn=None, causal=False, need_weights=True)
    -> MhaOutput``.

    query (batch, seq_q, d_model); key/value (batch, seq_k, d_model), default: query (self-attention).
    mask_pad (batch, seq_k) bool, True at padding; mask_attn (batch, seq_q, seq_k) bool, True where
    attention is forbidden; ``causal=True``: query i attends to keys 0..i only (no mask tensor to build).
    Masked scores are set to ``min_float`` before the softmax.

    ``need_weights=False`` (PyTorch's name; ``TransformerEncoder`` passes it) returns weights None and,
    when no dropout is active and ``quiet_softmax`` is off, runs ``F.scaled_dot_product_attention``:
    the backend's fused attention op, which keeps no (batch, heads, seq_q, seq_k) tensor for backward.
    Masked keys are then left out exactly (``min_float`` of -1e4 or below weighs 0 in float32 alike); a
    query whose keys are all masked gets a zero context, where the composed form averages every value.

    >>> mha = nn.MultiHeadAttentionConfig(d_model=16, n_heads=4).init()
    >>> pad = burn.tensor([[False, False, False, True]])   # the last key is padding
    >>> out = mha(burn.randn((1, 4, 16)), mask_pad=pad)
    >>> out.context.shape, out.weights.shape
    ((1, 4, 16), (1, 4, 4, 4))
    >>> out.weights[..., 3].max().item() < 1e-6
    True
    """

    def __init__(self, config: MultiHeadAttentionConfig, device: DeviceLike = None) -> None:
        d, n = config.d_model, config.n_heads
        check(
            d > 0 and n > 0 and d % n == 0,
            "MultiHeadAttentionConfig",
            f"d_model ({d}) must be a positive multiple of n_heads ({n})",
        )
        self.d_model, self.n_heads, self.d_k = d, n, d // n
        self.min_float, self.quiet_softmax = config.min_float, config.quiet_softmax
        lin = LinearConfig(d, d, True, config.initializer)
        self.query, self.key, self.value, self.output = (lin.init(device) for _ in range(4))
        self.dropout = Dropout(config.dropout)
        self._config = config

    def _fusable(self, query: Tensor) -> bool:
        """The fused op computes what the composed form would: no dropout on the weights (off, or not
        on an autodiff device), no quiet softmax, masked scores that weigh nothing."""
        dropping = self.dropout.prob > 0.0 and query.backend.is_autodiff
        return not dropping and not self.quiet_softmax and self.min_float <= _FUSED_MIN_FLOAT

    def _heads(self, x: Tensor) -> Tensor:
        b, s, _ = x.shape
        return x.reshape(b, s, self.n_heads, self.d_k).transpose(1, 2)  # (b, heads, s, d_k)

    def forward(
        self,
        query: Tensor,
        key: Tensor | None = None,
        value: Tensor | None = None,
        mask_pad: Tensor | None = None,
        mask_attn: Tensor | None = None,
        causal: bool = False,
        need_weights: bool = True,
    ) -> MhaOutput:
        key = query if key is None else key
        value = key if value is None else value
        for name, t in (("query", query), ("key", key), ("value", value)):
            if t.ndim != 3 or t.shape[2] != self.d_model:
                raise ShapeError(
                    f"MultiHeadAttention: {name} must be (batch, seq, {self.d_model}), got {t.shape}"
                )
        b, sq, sk = query.shape[0], query.shape[1], key.shape[1]
        q, k, v = self._heads(self.query(query)), self._heads(self.key(key)), self._heads(self.value(value))
        if mask_pad is not None:
            _check_mask("mask_pad", mask_pad, (b, sk))
        if mask_attn is not None:
            _check_mask("mask_attn", mask_attn, (b, sq, sk))
        if not need_weights and self._fusable(query):
            context = _fused_context(q, k, v, mask_pad, mask_attn, causal, query.device)
            context = context.transpose(1, 2).reshape(b, sq, self.d_model)
            return MhaOutput(self.output(context), None)
        scores = (q @ k.transpose(2, 3)) * (1.0 / math.sqrt(self.d_k))
        if mask_pad is not None:
            scores = scores.mask_fill(mask_pad.reshape(b, 1, 1, sk), self.min_float)
        if mask_attn is not None:
            scores = scores.mask_fill(mask_attn.reshape(b, 1, sq, sk), self.min_float)
        if causal:  # one (sq, sk) mask broadcast over batch and heads
            future = ~F.causal_mask(sq, sk, query.device)
            scores = scores.mask_fill(future.reshape(1, 1, sq, sk), self.min_float)
        weights = quiet_softmax(scores, -1) if self.quiet_softmax else F.softmax(scores, -1)
        context = self.dropout(weights) @ v  # (b, heads, sq, d_k)
        context = context.transpose(1, 2).reshape(b, sq, self.d_model)
        return MhaOutput(self.output(context), weights)


def _fused_context(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    mask_pad: Tensor | None,
    mask_attn: Tensor | None,
    causal: bool,
    device: DeviceLike,
) -> Tensor:
    """(b, heads, sq, d_k) through ``F.scaled_dot_product_attention``, the masks turned into one bool
    mask of the keys each query may see (broadcast over heads, and over queries for padding alone)."""
    b, _, sq, _ = q.shape
    sk = k.shape[2]
    allowed = None
    if mask_pad is not None:
        allowed = ~mask_pad.reshape(b, 1, 1, sk)
    if mask_attn is not None:
        seen = ~mask_attn.reshape(b, 1, sq, sk)
        allowed = seen if allowed is None else allowed & seen
    if causal and allowed is not None:
        allowed = allowed & F.causal_mask(sq, sk, device).reshape(1, 1, sq, sk)
    return F.scaled_dot_product_attention(q, k, v, attn_mask=allowed, is_causal=causal and allowed is None)


def _check_mask(name: str, mask: Tensor, shape: tuple[int, ...]) -> None:
    if not mask.dtype.is_bool:
        raise DTypeError(f"MultiHeadAttention: {name} must be a bool tensor, got {mask.dtype}")
    if tuple(mask.shape) != shape:
        raise ShapeError(f"MultiHeadAttention: {name} must have shape {shape}, got {mask.shape}")
