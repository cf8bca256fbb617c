"""Normalisation: layer, batch, group, instance and RMS norm. Written with basic tensor ops (mean,
sub, mul, rsqrt) so autodiff needs no dedicated rules; variances are biased (divide by n), as in Burn
and PyTorch's normalisation layers."""

from __future__ import annotations

from collections.abc import Sequence
from typing import overload

from ..._errors import ShapeError
from ..._tensor import Tensor
from ._activation import _fp32


def _moments(x: Tensor, dims: tuple[int, ...]) -> tuple[Tensor, Tensor, Tensor]:
    """(mean, x - mean, biased variance) over ``dims``, dims kept. Callers normalise the centred values
    returned here rather than subtracting again: under autodiff one full-size tensor stays saved for the
    backward, not two."""
    mean = x.mean(dims, keepdim=True)
    diff = x - mean
    return mean, diff, (diff * diff).mean(dims, keepdim=True)


def _centred(x: Tensor, mean: Tensor, diff: Tensor) -> Tensor:
    """The centred values to normalise: under autodiff the ones the variance computed (one full-size
    tensor kept for the backward, not two); without it ``x - mean`` again, which fusion computes inside
    the normalising kernel instead of writing the shared values out (one kernel and a full-size write
    less per norm)."""
    return diff if x._b.is_autodiff else x - mean


def _check_affine(op: str, t: Tensor | None, shape: tuple[int, ...], arg: str) -> None:
    if t is not None and tuple(t.shape) != shape:
        raise ShapeError(f"{op}: {arg} must have shape {shape}, got {t.shape}")


def layer_norm(
    x: Tensor,
    normalized_shape: int | Sequence[int],
    weight: Tensor | None = None,
    bias: Tensor | None = None,
    eps: float = 1e-5,
) -> Tensor:
    """Normalise over the trailing ``normalized_shape`` dims, then scale by weight and shift by bias.

    x: (..., *normalized_shape) -> same shape.

    >>> [round(v, 4) for v in F.layer_norm(burn.tensor([[1.0, 3.0]]), 2)[0].tolist()]
    [-1.0, 1.0]
    """
    x = _fp32("layer_norm", x)
    shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
    if tuple(x.shape[x.ndim - len(shape) :]) != shape:
        raise ShapeError(f"layer_norm: input of shape {x.shape} does not end with normalized_shape {shape}")
    dims = tuple(range(x.ndim - len(shape), x.ndim))
    _check_affine("layer_norm", weight, shape, "weight")
    _check_affine("layer_norm", bias, shape, "bias")
    mean, diff, var = _moments(x, dims)
    out = _centred(x, mean, diff) * (var + eps).rsqrt()
    if weight is not None:
        out = out * weight
    if bias is not None:
        out = out + bias
    return out


@overload
def _channel_view(op: str, x: Tensor, t: Tensor, arg: str) -> Tensor: ...
@overload
def _channel_view(op: str, x: Tensor, t: Tensor | None, arg: str) -> Tensor | None: ...
def _channel_view(op: str, x: Tensor, t: Tensor | None, arg: str) -> Tensor | None:
    if t is None:
        return None
    c = x.shape[1]
    if tuple(t.shape) != (c,):
        raise ShapeError(f"{op}: {arg} must have shape ({c},) for input {x.shape}, got {t.shape}")
    return t.reshape(1, c, *([1] * (x.ndim - 2)))


def batch_norm_train(
    x: Tensor, weight: Tensor | None, bias: Tensor | None, eps: float
) -> tuple[Tensor, Tensor, Tensor]:
    """Batch norm with the batch's statistics: (output, batch mean (C,), biased batch var (C,))."""
    x = _fp32("batch_norm", x)
    if x.ndim < 2:
        raise ShapeError(f"batch_norm: input must be (N, C, ...), got shape {x.shape}")
    dims = (0, *range(2, x.ndim))
    mean, diff, var = _moments(x, dims)
    w, b = _channel_view("batch_norm", x, weight, "weight"), _channel_view("batch_norm", x, bias, "bias")
    scale = (var + eps).rsqrt()
    # the weight joins the per-channel scale: one full-size product, and autodiff keeps only the
    # centred values (shared with the variance) instead of them and the normalised ones
    out = _centred(x, mean, diff) * (scale if w is None else scale * w)
    out = out if b is None else out + b
    c = x.shape[1]
    return out, mean.reshape(c), var.reshape(c)


def batch_norm(
    x: Tensor,
    running_mean: Tensor,
    running_var: Tensor,
    weight: Tensor | None = None,
    bias: Tensor | None = None,
    training: bool = False,
    eps: float = 1e-5,
) -> Tensor:
    """Batch norm over (N, C, ...) -> same shape; running_mean, running_var, weight and bias are (C,).
    ``training=False`` uses the running statistics; ``True`` the batch's (the ``BatchNorm`` module also
    updates its running statistics).

    >>> x = burn.full((2, 3, 4), 5.0)
    >>> y = F.batch_norm(x, burn.full((3,), 1.0), burn.full((3,), 4.0))   # (5 - 1) / sqrt(4)
    >>> y.shape, round(y[0, 0, 0].item(), 4)
    ((2, 3, 4), 2.0)
    """
    if training:
        return batch_norm_train(x, weight, bias, eps)[0]
    x = _fp32("batch_norm", x)
    if x.ndim < 2:
        raise ShapeError(f"batch_norm: input must be (N, C, ...), got shape {x.shape}")
    mean = _channel_view("batch_norm", x, running_mean, "running_mean")
    var = _channel_view("batch_norm", x, running_var, "running_var")
    out = (x - mean) * (var + eps).rsqrt()
    w, b = _channel_view("batch_norm", x, weight, "weight"), _channel_view("batch_norm", x, bias, "bias")
    out = out if w is None else out * w
    return out if b is None else out + b


def group_norm(
    x: Tensor,
    num_groups: int,
    weight: Tensor | None = None,
    bias: Tensor | None = None,
    eps: float = 1e-5,
) -> Tensor:
    """Normalise (N, C, ...) over groups of C // num_groups channels and the spatial dims -> same shape;
    weight and bias are (C,).

    >>> y = F.group_norm(burn.randn((2, 6, 4, 4)), num_groups=3)
    >>> y.shape, y.reshape(2, 3, -1).mean(2).abs().max().item() < 1e-5   # zero mean per group
    ((2, 6, 4, 4), True)
    """
    x = _fp32("group_norm", x)
    if x.ndim < 2:
        raise ShapeError(f"group_norm: input must be (N, C, ...), got shape {x.shape}")
    n, c = x.shape[0], x.shape[1]
    if num_groups <= 0 or c % num_groups:
        raise ShapeError(f"group_norm: {c} channels are not divisible into num_groups={num_groups}")
    grouped = x.reshape(n, num_groups, -1)
    mean, diff, var = _moments(grouped, (2,))
    out = (_centred(grouped, mean, diff) * (var + eps).rsqrt()).reshape(*x.shape)
    w, b = _channel_view("group_norm", x, weight, "weight"), _channel_view("group_norm", x, bias, "bias")
    out = out if w is None else out * w
    return out if b is None else out + b


def instance_norm(
    x: Tensor, weight: Tensor | None = None, bias: Tensor | None = None, eps: float = 1e-5
) -> Tensor:
    """Normalise each (sample, channel) of (N, C, ...) over its spatial dims -> same shape; weight and
    bias are (C,).

    >>> y = F.instance_norm(burn.randn((2, 3, 8)))
    >>> y.shape, y.mean(2).abs().max().item() < 1e-5
    ((2, 3, 8), True)
    """
    x = _fp32("instance_norm", x)
    if x.ndim < 2:
        raise ShapeError(f"instance_norm: input must be (N, C, ...), got shape {x.shape}")
    return group_norm(x, x.shape[1], weight, bias, eps)


def rms_norm(x: Tensor, weight: Tensor | None = None, eps: float = 1e-5) -> Tensor:
    """x / sqrt(mean(x^2, last dim) + eps) * weight (d,). x: (..., d) -> same shape.

    >>> [round(v, 3) for v in F.rms_norm(burn.tensor([3.0, 4.0])).tolist()]   # rms = sqrt(12.5)
    [0.849, 1.131]
    """
    x = _fp32("rms_norm", x)
    _check_affine("rms_norm", weight, (x.shape[-1],), "weight")
    out = x * ((x * x).mean(-1, keepdim=True) + eps).rsqrt()
    return out if weight is None else out * weight
