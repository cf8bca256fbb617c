"""Activations, softmax, dropout and linear. Each is one backend op where the backend has one, so the
autodiff decorator applies one backward rule per call."""

from __future__ import annotations

from typing import Any

from ..._amp_state import STATE as _AMP
from ..._amp_state import to_float32, to_half
from ..._checks import norm_dim
from ..._errors import DTypeError, ShapeError
from ..._tensor import Tensor, _wrap


def _check_tensor(op: str, x: Any, arg: str = "x") -> Tensor:
    if not isinstance(x, Tensor):
        raise TypeError(f"{op}: {arg} must be a burn.Tensor, got {type(x).__name__}")
    return x


def _float(op: str, x: Any) -> Tensor:
    x = _check_tensor(op, x)
    if x.dtype.is_bool:
        raise DTypeError(f"{op}: expected a float tensor, got {x.dtype}")
    return x if x.dtype.is_float else x.float()


def _fp32(op: str, x: Any) -> Tensor:
    """``_float``, and under ``burn.amp.autocast`` a half x computes in float32: the numerically
    sensitive ops (softmax, log_softmax, softplus, losses, norms) never run in half precision."""
    x = _float(op, x)
    return to_float32(x) if _AMP.on else x


def relu(x: Tensor) -> Tensor:
    """max(x, 0), element-wise. x: any shape -> same shape.

    >>> F.relu(burn.tensor([-1.0, 0.0, 2.0])).tolist()
    [0.0, 0.0, 2.0]
    """
    return _check_tensor("relu", x)._unary("relu")


def gelu(x: Tensor, approximate: str = "none") -> Tensor:
    """x * Phi(x) (``approximate="tanh"``: the tanh approximation). x: any shape -> same shape.

    >>> [round(v, 4) for v in F.gelu(burn.tensor([-1.0, 0.0, 1.0])).tolist()]
    [-0.1587, 0.0, 0.8413]
    >>> round(F.gelu(burn.tensor([1.0]), approximate="tanh").item(), 4)
    0.8412
    """
    ops = {"none": "gelu", "tanh": "gelu_tanh"}
    if approximate not in ops:
        raise ValueError(f"gelu: approximate must be 'none' or 'tanh', got {approximate!r}")
    return _float("gelu", x)._unary(ops[approximate])


def silu(x: Tensor) -> Tensor:
    """x * sigmoid(x). x: any shape -> same shape.

    >>> [round(v, 4) for v in F.silu(burn.tensor([-1.0, 0.0, 1.0])).tolist()]
    [-0.2689, 0.0, 0.7311]
    """
    return _float("silu", x)._unary("silu")


def sigmoid(x: Tensor) -> Tensor:
    """1 / (1 + exp(-x)). x: any shape -> same shape.

    >>> [round(v, 4) for v in F.sigmoid(burn.tensor([0.0, 2.0])).tolist()]
    [0.5, 0.8808]
    """
    return _float("sigmoid", x)._unary("sigmoid")


def tanh(x: Tensor) -> Tensor:
    """Hyperbolic tangent. x: any shape -> same shape.

    >>> [round(v, 4) for v in F.tanh(burn.tensor([-1.0, 0.0, 1.0])).tolist()]
    [-0.7616, 0.0, 0.7616]
    """
    return _float("tanh", x)._unary("tanh")


def softplus(x: Tensor, beta: float = 1.0) -> Tensor:
    """log(1 + exp(beta * x)) / beta. x: any shape -> same shape.

    >>> round(F.softplus(burn.zeros(1)).item(), 4), round(F.softplus(burn.zeros(1), beta=2.0).item(), 4)
    (0.6931, 0.3466)
    """
    x = _fp32("softplus", x)
    if beta <= 0:
        raise ValueError(f"softplus: beta must be positive, got {beta}")
    if beta == 1.0:
        return x._unary("softplus")
    return (x * beta)._unary("softplus") / beta


def mish(x: Tensor) -> Tensor:
    """x * tanh(softplus(x)). x: any shape -> same shape.

    >>> round(F.mish(burn.ones(1)).item(), 4)
    0.8651
    """
    return _float("mish", x)._unary("mish")


def hard_sigmoid(x: Tensor, alpha: float = 1.0 / 6.0, beta: float = 0.5) -> Tensor:
    """clamp(alpha * x + beta, 0, 1); the defaults are PyTorch's hardsigmoid (Burn uses 0.2, 0.5).
    x: any shape -> same shape.

    >>> F.hard_sigmoid(burn.tensor([-3.0, 0.0, 3.0])).tolist()
    [0.0, 0.5, 1.0]
    """
    x = _float("hard_sigmoid", x)
    if alpha == 1.0 / 6.0 and beta == 0.5:
        return x._unary("hard_sigmoid")
    return (x * alpha + beta).clamp(0.0, 1.0)


def leaky_relu(x: Tensor, negative_slope: float = 0.01) -> Tensor:
    """x where x >= 0, else negative_slope * x. x: any shape -> same shape.

    >>> F.leaky_relu(burn.tensor([-2.0, 2.0]), negative_slope=0.5).tolist()
    [-1.0, 2.0]
    """
    x = _float("leaky_relu", x)
    return _wrap(x.backend.leaky_relu(x.primitive, float(negative_slope)), x.backend)


def prelu(x: Tensor, alpha: Tensor) -> Tensor:
    """Leaky relu with a learned slope: ``alpha`` (1,) for all, or (C,) per channel (dim 1 of x).
    x: (N, C, ...) -> same shape.

    >>> F.prelu(burn.tensor([[-1.0, -1.0]]), burn.tensor([0.25, 0.5])).tolist()
    [[-0.25, -0.5]]
    """
    x = _float("prelu", x)
    alpha = _check_tensor("prelu", alpha, "alpha")
    if alpha.ndim != 1:
        raise ShapeError(f"prelu: alpha must be 1-d, got shape {alpha.shape}")
    n = alpha.shape[0]
    if n != 1:
        if x.ndim < 2 or x.shape[1] != n:
            raise ShapeError(f"prelu: alpha has {n} values but x of shape {x.shape} has no dim 1 of size {n}")
        alpha = alpha.reshape(n, *([1] * (x.ndim - 2)))
    # relu(x) - alpha * relu(-x): only relu/mul/sub, each with a simple backward rule
    return x._unary("relu") - alpha * (-x)._unary("relu")


def softmax(x: Tensor, dim: int) -> Tensor:
    """exp(x) / sum(exp(x)) along ``dim`` (computed stably). x: any shape -> same shape.

    >>> [round(v, 4) for v in F.softmax(burn.tensor([1.0, 2.0, 3.0]), dim=0).tolist()]
    [0.09, 0.2447, 0.6652]
    """
    x = _fp32("softmax", x)
    d = norm_dim("softmax", dim, x.ndim)
    return _wrap(x.backend.softmax(x.primitive, d), x.backend)


def log_softmax(x: Tensor, dim: int) -> Tensor:
    """log(softmax(x, dim)), computed stably. x: any shape -> same shape.

    >>> [round(v, 4) for v in F.log_softmax(burn.zeros((1, 4)), dim=1)[0].tolist()]   # log(1/4)
    [-1.3863, -1.3863, -1.3863, -1.3863]
    """
    x = _fp32("log_softmax", x)
    d = norm_dim("log_softmax", dim, x.ndim)
    return _wrap(x.backend.log_softmax(x.primitive, d), x.backend)


def dropout(x: Tensor, prob: float, training: bool | None = None) -> Tensor:
    """Zero each element with probability ``prob`` and scale the rest by 1 / (1 - prob).

    ``training=None`` follows Burn: active only when x lives on an autodiff device.
    x: any shape -> same shape.

    >>> F.dropout(burn.ones(3), 0.5).tolist()   # not on an autodiff device: unchanged
    [1.0, 1.0, 1.0]
    >>> sorted(set(F.dropout(burn.ones(100), 0.5, training=True).tolist()))
    [0.0, 2.0]
    """
    x = _float("dropout", x)
    if not 0.0 <= prob <= 1.0:
        raise ValueError(f"dropout: prob must be in [0, 1], got {prob}")
    active = x.backend.is_autodiff if training is None else training
    if not active or prob == 0.0:
        return x
    if prob == 1.0:
        return x * 0.0
    from ..._creation import bernoulli

    keep = bernoulli(x.shape, 1.0 - prob, dtype=x.dtype, device=x.device)
    return x * keep * (1.0 / (1.0 - prob))


def linear(x: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """x @ weight + bias with Burn's layout: weight (d_input, d_output), bias (d_output,).

    x: (..., d_input) -> (..., d_output).

    >>> y = F.linear(burn.ones((2, 3)), burn.ones((3, 4)), burn.full((4,), 0.5))
    >>> y.shape, y[0, 0].item()
    ((2, 4), 3.5)
    """
    x = _check_tensor("linear", x)
    weight = _check_tensor("linear", weight, "weight")
    if not x.dtype.is_float:  # as conv and PyTorch: no silent int -> float promotion
        raise DTypeError(f"linear: x must be a float tensor, got {x.dtype} (cast it: x.float())")
    if weight.ndim != 2:
        raise ShapeError(f"linear: weight must be 2-d (d_input, d_output), got {weight.shape}")
    if x.ndim < 1 or x.shape[-1] != weight.shape[0]:
        raise ShapeError(
            f"linear: input of shape {x.shape} has last dim {x.shape[-1] if x.ndim else None}, "
            f"expected d_input={weight.shape[0]}"
        )
    if _AMP.on:  # autocast: x, weight and bias in the half dtype, one half op
        x, weight = to_half("linear", x), to_half("linear", weight)
        bias = None if bias is None else to_half("linear", _check_tensor("linear", bias, "bias"))
    out = x @ weight if x.ndim >= 2 else (x.unsqueeze(0) @ weight).squeeze(0)
    if bias is not None:
        if bias.shape != (weight.shape[1],):
            raise ShapeError(f"linear: bias must have shape ({weight.shape[1]},), got {bias.shape}")
        out = out + bias
    return out
