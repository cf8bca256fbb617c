"""Blocks of recurrent (linear-attention and state-space) models that carry a state between calls:
LinearAttention and CausalConvWithState (opset 27).

LinearAttention keeps one (d_k, d_v) state per key/value head and folds the sequence into it step by
step (optionally decayed, ``gated``, and corrected towards the value the state already recalls for the
key, ``delta``), in float32 as the reference does; CausalConvWithState is a depthwise convolution over
the past state followed by the input.
"""

from __future__ import annotations

import math
from typing import Any

import burn
from burn.nn import functional as F

from .._graph import Node
from .._registry import attr_in, checks, op, requires

_RULES = ("linear", "gated", "delta", "gated_delta")


def _heads(x: burn.Tensor, heads: int) -> burn.Tensor:
    """(B, T, H*D) -> (B, H, T, D) in float32."""
    b, t, hidden = x.shape
    return x.cast(burn.float32).reshape(b, t, heads, hidden // heads).permute(0, 2, 1, 3)


def _linear_attention_check(node: Node) -> str | None:
    q, kv = int(node.attrs.get("q_num_heads", 0)), int(node.attrs.get("kv_num_heads", 0))
    if q <= 0 or kv <= 0 or q % kv:
        return f"q_num_heads={q} must be a positive multiple of kv_num_heads={kv}"
    return None


@op(
    "LinearAttention",
    since=27,
    check=checks(
        requires("q_num_heads", "kv_num_heads"),
        attr_in("update_rule", _RULES, "gated_delta"),
        _linear_attention_check,
    ),
)
def linear_attention(
    ctx: Any,
    node: Node,
    query: burn.Tensor,
    key: burn.Tensor,
    value: burn.Tensor,
    past_state: burn.Tensor | None = None,
    decay: burn.Tensor | None = None,
    beta: burn.Tensor | None = None,
) -> tuple[burn.Tensor, burn.Tensor]:
    """query (B, T, Hq*dk), key (B, T, Hkv*dk), value (B, T, Hkv*dv) -> output (B, T, Hq*dv) and the
    state (B, Hkv, dk, dv)."""
    a = node.attrs
    rule = a.get("update_rule", "gated_delta")
    gating, delta = rule in ("gated", "gated_delta"), rule in ("delta", "gated_delta")
    for name, given, needed in (("decay", decay, gating), ("beta", beta, delta)):
        if needed and given is None:
            raise ValueError(f"LinearAttention: update_rule {rule!r} needs the {name} input")
        if given is not None and not needed:
            raise ValueError(f"LinearAttention: update_rule {rule!r} takes no {name} input")
    hq, hkv = int(a["q_num_heads"]), int(a["kv_num_heads"])
    b, t, _ = query.shape
    dk, dv = query.shape[-1] // hq, value.shape[-1] // hkv
    q, k, v = _heads(query, hq), _heads(key, hkv), _heads(value, hkv)
    if decay is not None:
        per_head = decay.shape[-1] == hkv
        decay = (decay.reshape(b, t, hkv, 1).permute(0, 2, 1, 3) if per_head else _heads(decay, hkv)).exp()
    if beta is not None:
        beta = beta.cast(burn.float32).reshape(b, t, beta.shape[-1], 1).permute(0, 2, 1, 3)
    if past_state is not None:
        state = past_state.cast(burn.float32)
    else:
        state = burn.zeros((b, hkv, dk, dv), dtype=burn.float32, device=query.device)
    scale = float(a.get("scale", 0.0)) or 1.0 / math.sqrt(dk)
    groups = hq // hkv
    outs = []
    for i in range(t):
        k_t = k.narrow(2, i, 1)  # (B, Hkv, 1, dk)
        v_t = v.narrow(2, i, 1)  # (B, Hkv, 1, dv)
        if decay is not None:
            state = state * decay.narrow(2, i, 1).transpose(2, 3)  # (B, Hkv, dk or 1, 1)
        if beta is not None:
            v_t = beta.narrow(2, i, 1) * (v_t - k_t @ state)
        state = state + k_t.transpose(2, 3) @ v_t
        read = state
        if groups > 1:
            read = state.unsqueeze(2).expand(b, hkv, groups, dk, dv).reshape(b, hq, dk, dv)
        outs.append(q.narrow(2, i, 1) @ read)  # (B, Hq, 1, dv)
    out = burn.cat(outs, 2) * scale
    output = out.permute(0, 2, 1, 3).reshape(b, t, hq * dv).cast(query.dtype)
    return output, state.cast(past_state.dtype if past_state is not None else query.dtype)


@op("CausalConvWithState", since=27, check=attr_in("activation", ("none", "silu", "swish"), "none"))
def causal_conv_with_state(
    ctx: Any,
    node: Node,
    x: burn.Tensor,
    weight: burn.Tensor,
    bias: burn.Tensor | None = None,
    past_state: burn.Tensor | None = None,
) -> tuple[burn.Tensor, burn.Tensor]:
    """x (B, C, L), weight (C, 1, K) depthwise, past_state (B, C, K-1) -> output (B, C, L) and the
    state: the last K-1 positions of the state followed by the input."""
    b, c, _ = x.shape
    k = weight.shape[2]
    if past_state is None:
        past_state = burn.zeros((b, c, k - 1), dtype=x.dtype, device=x.device)
    padded = burn.cat([past_state.cast(x.dtype), x], 2) if k > 1 else x
    y = F.conv1d(padded, weight, bias, stride=1, padding=0, groups=c)
    if node.attrs.get("activation", "none") in ("silu", "swish"):
        y = F.silu(y.cast(burn.float32)).cast(x.dtype) if y.dtype is not burn.float32 else F.silu(y)
    state = padded.narrow(2, padded.shape[2] - (k - 1), k - 1)
    return y, state
