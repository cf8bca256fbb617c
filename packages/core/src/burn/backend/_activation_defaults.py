"""Activation defaults (Burn's ActivationOps): each activation composed from the required core, so a
backend that implements only the core runs every activation. A backend whose ``unary`` has its own
kernel for an activation lists it in ``Backend.native_activations`` and these are not used."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ._base import Backend

Prim = Any


def _sigmoid(b: Backend, x: Prim) -> Prim:
    # the tanh form: no overflow for large |x|, unlike 1 / (1 + exp(-x))
    return b.binary("mul", b.binary("add", b.unary("tanh", b.binary("mul", x, 0.5)), 1.0), 0.5)


def _softplus(b: Backend, x: Prim) -> Prim:
    # log(1 + e^x) = max(x, 0) + log1p(e^-|x|): no overflow for large x
    tail = b.unary("log1p", b.unary("exp", b.unary("neg", b.unary("abs", x))))
    return b.binary("add", b.binary("maximum", x, 0.0), tail)


def _gelu(b: Backend, x: Prim) -> Prim:
    cdf = b.binary("add", b.unary("erf", b.binary("mul", x, 1.0 / math.sqrt(2.0))), 1.0)
    return b.binary("mul", b.binary("mul", x, 0.5), cdf)


def _gelu_tanh(b: Backend, x: Prim) -> Prim:
    cube = b.binary("mul", b.binary("mul", x, x), x)
    inner = b.binary("mul", b.binary("add", x, b.binary("mul", cube, 0.044715)), math.sqrt(2.0 / math.pi))
    return b.binary("mul", b.binary("mul", x, 0.5), b.binary("add", b.unary("tanh", inner), 1.0))


def _hard_sigmoid(b: Backend, x: Prim) -> Prim:
    return b.clamp(b.binary("add", b.binary("div", x, 6.0), 0.5), 0.0, 1.0)


ACTIVATION_DEFAULTS: dict[str, Callable[[Backend, Prim], Prim]] = {
    "relu": lambda b, x: b.binary("maximum", x, 0),
    "sigmoid": _sigmoid,
    "gelu": _gelu,
    "gelu_tanh": _gelu_tanh,
    "silu": lambda b, x: b.binary("mul", x, _sigmoid(b, x)),
    "softplus": _softplus,
    "mish": lambda b, x: b.binary("mul", x, b.unary("tanh", _softplus(b, x))),
    "hard_sigmoid": _hard_sigmoid,
}
