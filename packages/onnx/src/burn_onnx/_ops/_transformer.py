"""The opset-23+ transformer ops: Attention, RMSNormalization and RotaryEmbedding.

Attention runs burn's fused attention (``F.scaled_dot_product_attention``: flash kernels on wgpu, the
composed default elsewhere) whenever its attributes leave the scores unobserved (no softcap, no
``qk_matmul_output``): grouped-query heads are repeated, every mask (the user's, the offset-aligned causal
frontier, padding from ``nonpad_kv_seqlen``, sliding windows) is folded into one additive bias. With a
softcap or a requested ``qk_matmul_output`` it runs the composition the ONNX reference spells out.
"""

from __future__ import annotations

import math
from typing import Any

import burn
from burn.nn import functional as F

from .._graph import Node
from .._registry import attr_in, checks, op
from ._common import axis

_NEG_INF = float("-inf")


def _heads(x: burn.Tensor, heads: int) -> burn.Tensor:
    """(B, L, H*E) -> (B, H, L, E)."""
    b, n, hidden = x.shape
    return x.reshape(b, n, heads, hidden // heads).permute(0, 2, 1, 3)


def _repeat_heads(x: burn.Tensor, times: int) -> burn.Tensor:
    """(B, H, S, E) -> (B, H*times, S, E), each head repeated in place: [h0, h0, h1, h1, ...]."""
    if times == 1:
        return x
    b, h, s, e = x.shape
    return x.unsqueeze(2).expand(b, h, times, s, e).reshape(b, h * times, s, e)


def _additive(allowed: burn.Tensor, dtype: burn.DType) -> burn.Tensor:
    zero = burn.zeros(tuple(allowed.shape), dtype=dtype, device=allowed.device)
    return zero.mask_fill(allowed.logical_not(), _NEG_INF)


def _bias(
    node: Node,
    mask: burn.Tensor | None,
    nonpad: burn.Tensor | None,
    n_q: int,
    n_kv: int,
    past: int,
    dtype: burn.DType,
    device: burn.Device,
) -> tuple[burn.Tensor | None, bool]:
    """The additive (0 / -inf) bias broadcasting to (B, H, L, S) and whether it is only the plain
    top-left causal triangle (which the fused op draws itself)."""
    causal = bool(node.attrs.get("is_causal", 0))
    left = int(node.attrs.get("left_window_size", -1))
    right = int(node.attrs.get("right_window_size", -1))
    bias = None
    if mask is not None:
        short = n_kv - mask.shape[-1]
        if mask.dtype.is_bool:
            mask = _additive(mask, dtype)
        elif mask.dtype is not dtype:
            mask = mask.cast(dtype)
        if short > 0:  # a mask shorter than the keys: the extra keys are masked
            mask = mask.pad([0, short], "constant", _NEG_INF)
        bias = mask
    if causal and bias is None and nonpad is None and past == 0 and left < 0 and right < 0:
        return None, True
    int_dt = device.backend.default_int
    # a query at in-block index i sits at absolute position i + offset: past keys, or per batch the
    # valid keys of an external cache less the block
    offset: Any = past
    if nonpad is not None and past == 0:
        offset = (nonpad.cast(int_dt) - n_q).reshape(-1, 1, 1, 1)
    if causal or left >= 0 or right >= 0:
        rows = burn.arange(0, n_q, dtype=int_dt, device=device).reshape(n_q, 1)
        cols = burn.arange(0, n_kv, dtype=int_dt, device=device).reshape(1, n_kv)
        diff = rows - cols + offset  # how far key j lies behind the query
        allowed = None
        for part in (
            diff >= 0 if causal else None,
            diff <= left if left >= 0 else None,
            diff >= -right if right >= 0 else None,
        ):
            if part is not None:
                allowed = part if allowed is None else allowed.logical_and(part)
        assert allowed is not None
        frontier = _additive(allowed, dtype)
        bias = frontier if bias is None else bias + frontier
    if nonpad is not None:
        cols = burn.arange(0, n_kv, dtype=int_dt, device=device).reshape(1, n_kv)
        valid = cols < nonpad.cast(int_dt).reshape(-1, 1)
        padding = _additive(valid, dtype).reshape(-1, 1, 1, n_kv)
        bias = padding if bias is None else bias + padding
    return bias, False


def _softmax_rows(scores: burn.Tensor, empty: burn.Tensor | None) -> burn.Tensor:
    """Softmax over the last dim; rows in ``empty`` (no allowed key) give zeros, not NaN."""
    if empty is None:
        return F.softmax(scores, -1)
    safe = scores.mask_fill(empty, 0.0)
    return F.softmax(safe, -1).mask_fill(empty, 0.0)


def _attention_check(node: Node) -> str | None:
    mode = int(node.attrs.get("qk_matmul_output_mode", 0))
    if mode not in (0, 1, 2, 3):
        return f"qk_matmul_output_mode={mode} is not supported (supported: 0, 1, 2, 3)"
    return None


@op("Attention", since=23, check=_attention_check)
def attention(
    ctx: Any,
    node: Node,
    q: burn.Tensor,
    k: burn.Tensor,
    v: burn.Tensor,
    mask: burn.Tensor | None = None,
    past_key: burn.Tensor | None = None,
    past_value: burn.Tensor | None = None,
    nonpad: burn.Tensor | None = None,
) -> tuple[Any, ...]:
    a = node.attrs
    three_d = q.ndim == 3
    if three_d and not ("q_num_heads" in a and "kv_num_heads" in a):
        raise ValueError(
            "Attention: 3-d inputs (B, S, hidden) need the q_num_heads and kv_num_heads attributes"
        )
    if three_d:
        q = _heads(q, int(a["q_num_heads"]))
        k = _heads(k, int(a["kv_num_heads"]))
        v = _heads(v, int(a["kv_num_heads"]))
    dtype = q.dtype
    past = 0
    if past_key is not None and past_value is not None:
        past = past_key.shape[2]
        k, v = burn.cat([past_key, k], 2), burn.cat([past_value, v], 2)
    present_k, present_v = k, v
    n_q, n_kv = q.shape[2], k.shape[2]
    scale = float(a["scale"]) if "scale" in a else 1.0 / math.sqrt(q.shape[3])
    groups = q.shape[1] // k.shape[1]
    k, v = _repeat_heads(k, groups), _repeat_heads(v, groups)
    bias, plain_causal = _bias(node, mask, nonpad, n_q, n_kv, past, dtype, q.device)
    softcap = float(a.get("softcap", 0.0))
    wants_qk = len(node.outputs) > 3 and bool(node.outputs[3])
    if softcap <= 0 and not wants_qk:
        y = F.scaled_dot_product_attention(q, k, v, bias, is_causal=plain_causal, scale=scale)
        qk = None
    else:
        y, qk = _composed(node, q, k, v, bias, plain_causal, scale, softcap)
    if three_d:
        y = y.permute(0, 2, 1, 3).reshape(y.shape[0], n_q, -1)
    return y, present_k, present_v, qk


def _composed(
    node: Node,
    q: burn.Tensor,
    k: burn.Tensor,
    v: burn.Tensor,
    bias: burn.Tensor | None,
    plain_causal: bool,
    scale: float,
    softcap: float,
) -> tuple[burn.Tensor, burn.Tensor]:
    """The reference's steps: scaled scores, softcap, bias, softmax (zero for rows with no allowed key),
    weighted values; also the scores ``qk_matmul_output_mode`` asks for."""
    n_q, n_kv = q.shape[2], k.shape[2]
    if plain_causal:
        bias = _additive(F.causal_mask(n_q, n_kv, q.device), q.dtype)
    dtype = q.dtype
    work = burn.float32 if dtype in (burn.float16, burn.bfloat16) else dtype
    precision = node.attrs.get("softmax_precision")
    scores = (q.cast(work) @ k.cast(work).transpose(2, 3)) * scale
    if softcap > 0:
        scores = (scores / softcap).tanh() * softcap
    capped = scores
    empty = None
    if bias is not None:
        scores = scores + bias.cast(work)
        empty = bias.max(-1, keepdim=True).isinf()  # the bias alone decides a row has no key
    probs = _softmax_rows(scores, empty)
    mode = int(node.attrs.get("qk_matmul_output_mode", 0))
    qk = {0: capped, 1: capped, 2: scores, 3: probs}[mode]
    if precision is not None and mode == 3 and dtype in (burn.float16, burn.bfloat16):
        qk = qk.cast(dtype)
    y = probs.cast(dtype) @ v if work is dtype else (probs @ v.cast(work)).cast(dtype)
    return y, qk.cast(dtype)


# ------------------------------------------------------------------ normalisation and rotary


def _stash_check(node: Node) -> str | None:
    stash = int(node.attrs.get("stash_type", 1))
    if stash != 1:
        return f"stash_type={stash} is not supported (supported: 1, float32 statistics)"
    return None


@op("RMSNormalization", since=23, check=_stash_check)
def rms_norm(ctx: Any, node: Node, x: burn.Tensor, scale: burn.Tensor) -> burn.Tensor:
    a = axis(int(node.attrs.get("axis", -1)), x.ndim, node)
    eps = float(node.attrs.get("epsilon", 1e-5))
    work = x.cast(burn.float32) if x.dtype in (burn.float16, burn.bfloat16) else x
    if a == x.ndim - 1 and scale.ndim <= 1:
        y = F.rms_norm(work, None, eps)
    else:
        dims = tuple(range(a, x.ndim))
        y = work * ((work * work).mean(dims, keepdim=True) + eps).rsqrt()
    return (y.cast(x.dtype) if y.dtype is not x.dtype else y) * scale.cast(x.dtype)


@op("RotaryEmbedding", since=23, check=checks(attr_in("interleaved", (0, 1), 0)))
def rotary_embedding(
    ctx: Any,
    node: Node,
    x: burn.Tensor,
    cos: burn.Tensor,
    sin: burn.Tensor,
    position_ids: burn.Tensor | None = None,
) -> burn.Tensor:
    """x (B, H, S, D) or (B, S, H*D) with ``num_heads``; caches (B, S, R/2), or (max_pos, R/2) indexed
    by ``position_ids`` (B, S); R = ``rotary_embedding_dim`` (default D) leading features rotate."""
    shape = x.shape
    if x.ndim == 3:
        if "num_heads" not in node.attrs:
            raise ValueError("RotaryEmbedding: a 3-d input (B, S, hidden) needs the num_heads attribute")
        heads = int(node.attrs["num_heads"])
        x = _heads(x, heads)
    b, h, s, d = x.shape
    r = int(node.attrs.get("rotary_embedding_dim", 0)) or d
    if position_ids is not None:
        flat = position_ids.reshape(-1)
        cos = cos.select(0, flat).reshape(b, s, -1)
        sin = sin.select(0, flat).reshape(b, s, -1)
    if cos.shape[-1] != r // 2 or sin.shape[-1] != r // 2:
        raise ValueError(f"RotaryEmbedding: cos/sin caches end in {cos.shape[-1]}, expected {r // 2} (R/2)")
    cos, sin = cos.unsqueeze(1).cast(x.dtype), sin.unsqueeze(1).cast(x.dtype)  # (B, 1, S, R/2)
    turned = x.narrow(3, 0, r) if r < d else x
    interleaved = bool(node.attrs.get("interleaved", 0))
    if interleaved:
        pairs = turned.reshape(b, h, s, r // 2, 2)
        x1, x2 = pairs.narrow(4, 0, 1).squeeze(4), pairs.narrow(4, 1, 1).squeeze(4)
    else:
        x1, x2 = turned.narrow(3, 0, r // 2), turned.narrow(3, r // 2, r // 2)
    real = cos * x1 - sin * x2
    imag = sin * x1 + cos * x2
    out = burn.stack([real, imag], 4).reshape(b, h, s, r) if interleaved else burn.cat([real, imag], 3)
    if r < d:
        out = burn.cat([out, x.narrow(3, r, d - r)], 3)
    if len(shape) == 3:
        out = out.permute(0, 2, 1, 3).reshape(*shape)
    return out
