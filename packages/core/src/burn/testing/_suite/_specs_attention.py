"""Conformance rows of fused attention: ``F.scaled_dot_product_attention`` (the backend's ``attention``
op, L != S, E != Ev, causal, bool and float masks with broadcast dims, a fully masked row) and the
backend's ``attention`` / ``attention_backward`` called directly (out, lse, dq, dk, dv), so every backend
is checked against the numpy backend on both ops and their graphs are captured and replayed."""

from __future__ import annotations

from typing import Any

import numpy as np

import burn

from .._specs import BF16, F16, F32, FLOATS, OpSpec, _module_fn, _values

_TOL = {F16: (2e-2, 2e-2), BF16: (5e-2, 5e-2), F32: (1e-4, 1e-5)}
Q, K, V = (2, 3, 4, 8), (2, 3, 6, 8), (2, 3, 6, 5)  # L=4 queries, S=6 keys, E=8, Ev=5


def _qkv(*extra: tuple[str, tuple[int, ...]]) -> Any:
    """q, k, v (and extra inputs: a bool mask with every other row fully masked, a float mask, an output
    gradient) for one dtype."""

    def make(rng: np.random.Generator, dtype: str) -> list[np.ndarray]:
        out = [_values(rng, dtype, s, "normal") for s in (Q, K, V)]
        for kind, shape in extra:
            if kind == "bool":
                mask = rng.random(shape) < 0.6
                mask[..., 1, :] = False  # query 1 sees no key: zeros
                out.append(mask)
            else:
                out.append(_values(rng, dtype, shape, "normal"))
        return out

    return make


def _sdpa(**kwargs: Any) -> Any:
    return lambda c, q, k, v, *m: _module_fn("scaled_dot_product_attention")(
        q, k, v, *(m[:1] if m else ()), **kwargs
    )


def _op_and_grads(is_causal: bool, masked: bool) -> Any:
    """The backend's attention and attention_backward called directly: (out, lse, dq, dk, dv)."""

    def call(c: Any, q: burn.Tensor, k: burn.Tensor, v: burn.Tensor, *rest: burn.Tensor) -> Any:
        b = q.backend
        mask = rest[0].primitive if masked else None
        grad = rest[-1].primitive
        out, lse = b.attention(q.primitive, k.primitive, v.primitive, mask, is_causal, 0.4)
        grads = b.attention_backward(
            q.primitive, k.primitive, v.primitive, mask, is_causal, 0.4, out, lse, grad
        )
        wrap = burn.backend.from_primitive
        return (wrap(out, b), wrap(lse, b), *(wrap(g, b) for g in grads))

    return call


def rows() -> list[OpSpec]:
    return [
        OpSpec("sdpa_causal", _sdpa(is_causal=True), _qkv(), FLOATS, tol=_TOL),
        OpSpec("sdpa_bool_mask_broadcast", _sdpa(), _qkv(("bool", (1, 3, 4, 6))), FLOATS, tol=_TOL),
        OpSpec("sdpa_float_mask_2d", _sdpa(scale=0.7), _qkv(("float", (4, 6))), FLOATS, tol=_TOL),
        OpSpec(
            "attention_op_causal",
            _op_and_grads(True, False),
            _qkv(("float", Q[:3] + V[3:])),
            FLOATS,
            tol=_TOL,
        ),
        OpSpec(
            "attention_op_bool_mask",
            _op_and_grads(False, True),
            _qkv(("bool", (2, 1, 4, 6)), ("float", Q[:3] + V[3:])),
            FLOATS,
            tol=_TOL,
        ),
    ]
