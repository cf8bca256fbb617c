"""Argument checks shared by the module ops (conv, pools, interpolate, unfold, embedding). Each error
names the op, the argument, what was expected and what was received."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from ..._errors import DeviceError, DTypeError, ShapeError
from ..._tensor import Tensor
from ...backend._shapes import pool_out_sizes

LAYOUTS = {1: "(N, C, L)", 2: "(N, C, H, W)", 3: "(N, C, D, H, W)"}


def tensor_arg(op: str, t: Any, arg: str) -> Tensor:
    if not isinstance(t, Tensor):
        raise TypeError(f"{op}: {arg} must be a burn.Tensor, got {type(t).__name__}")
    return t


def spatial_input(op: str, x: Any, nd: int, kind: str = "float") -> Tensor:
    """x as a batched channels-first tensor with ``nd`` spatial dims; ``kind`` "float" or "num"."""
    x = tensor_arg(op, x, "x")
    if x.ndim != nd + 2:
        raise ShapeError(f"{op}: x must be {nd + 2}-d {LAYOUTS[nd]}, got shape {x.shape}")
    if kind == "float" and not x.dtype.is_float:
        raise DTypeError(f"{op}: x must be a float tensor, got {x.dtype}")
    if x.dtype.is_bool:
        raise DTypeError(f"{op}: x must be a numeric tensor, got {x.dtype}")
    if any(s == 0 for s in x.shape[1:]):
        raise ShapeError(f"{op}: x must have non-empty channel and spatial dims, got shape {x.shape}")
    return x


def companion(op: str, t: Any, arg: str, x: Tensor, ndim: int | None = None) -> Tensor:
    """A second tensor argument (weight, bias) on x's device, of x's dtype and, if given, rank."""
    t = tensor_arg(op, t, arg)
    if t.backend is not x.backend:
        raise DeviceError(f"{op}: {arg} is on {t.device} but x is on {x.device}; move one with .to(device)")
    if t.dtype is not x.dtype:
        raise DTypeError(f"{op}: {arg} has dtype {t.dtype} but x has {x.dtype}; cast one to match")
    if ndim is not None and t.ndim != ndim:
        raise ShapeError(f"{op}: {arg} must be {ndim}-d, got shape {t.shape}")
    return t


# ``ints``' answers for plain ints and tuples of plain ints (a layer passes the same ones every call:
# the checks cost a conv or pool call several microseconds); bools and int-likes are checked each time
_INTS: dict[tuple[Any, ...], tuple[int, ...]] = {}


def ints(op: str, value: Any, n: int, arg: str, minimum: int) -> tuple[int, ...]:
    """An int or n ints (list/tuple), each >= minimum."""
    plain = type(value) is int or (type(value) is tuple and all(type(v) is int for v in value))
    if plain:
        got = _INTS.get((value, n, minimum))
        if got is not None:
            return got
    out = _ints(op, value, n, arg, minimum)
    if plain and len(_INTS) < 4096:
        _INTS[(value, n, minimum)] = out
    return out


def _ints(op: str, value: Any, n: int, arg: str, minimum: int) -> tuple[int, ...]:
    if _is_int(value):
        out = (int(value),) * n
    elif isinstance(value, Sequence) and not isinstance(value, str):
        out = tuple(value)
        if len(out) != n or not all(_is_int(v) for v in out):
            raise TypeError(f"{op}: {arg} must be an int or a tuple of {n} int{'s' * (n > 1)}, got {value!r}")
        out = tuple(int(v) for v in out)
    else:
        raise TypeError(f"{op}: {arg} must be an int or a tuple of {n} int{'s' * (n > 1)}, got {value!r}")
    if any(v < minimum for v in out):
        raise ValueError(f"{op}: {arg} must be >= {minimum}, got {value!r}")
    return out


def int_arg(op: str, value: Any, arg: str, minimum: int) -> int:
    if not _is_int(value):
        raise TypeError(f"{op}: {arg} must be an int, got {value!r}")
    if value < minimum:
        raise ValueError(f"{op}: {arg} must be >= {minimum}, got {value}")
    return int(value)


def _is_int(v: Any) -> bool:
    return hasattr(v, "__index__") and not isinstance(v, bool) and not isinstance(v, Tensor)


def check_out_size(
    op: str, out: Sequence[int], spatial: Sequence[int], detail: str | Callable[[], str]
) -> None:
    if any(o <= 0 for o in out):
        if callable(detail):
            detail = detail()
        raise ShapeError(
            f"{op}: output size would be {tuple(out)} for input spatial size {tuple(spatial)} ({detail}); "
            "the padded input must be at least as large as the (dilated) kernel"
        )


def window_out_sizes(
    op: str,
    spatial: Sequence[int],
    kernel: Sequence[int],
    stride: Sequence[int],
    padding: Sequence[int],
    dilation: Sequence[int],
    detail: str | Callable[[], str],
    ceil_mode: bool = False,
) -> tuple[int, ...]:
    """Output sizes of a sliding window (conv, unfold, pools; PyTorch's floor rule, or its ceil rule for
    pools with ``ceil_mode``), checked to be positive; ``detail`` names the arguments in the error (a
    callable: built only for the error)."""
    out = pool_out_sizes(spatial, kernel, stride, padding, dilation, ceil_mode)
    check_out_size(op, out, spatial, detail)
    return out


def weight_and_bias(op: str, x: Tensor, weight: Any, bias: Any, nd: int) -> tuple[Tensor, Tensor | None]:
    """A conv weight ((nd + 2)-d, no zero sizes) and optional bias (1-d) on x's device and dtype."""
    weight = companion(op, weight, "weight", x, nd + 2)
    if any(s == 0 for s in weight.shape):
        raise ShapeError(f"{op}: weight must have non-zero sizes, got shape {weight.shape}")
    if bias is not None:
        bias = companion(op, bias, "bias", x, 1)
    return weight, bias


def check_groups(op: str, c_in: int, weight: Tensor, groups: int) -> None:
    """``groups`` divides the channels, and the weight ``(C_out, C_in / groups, *kernel)`` fits ``c_in``."""
    c_out = weight.shape[0]
    if c_in % groups or c_out % groups:
        raise ValueError(
            f"{op}: groups={groups} must divide both input channels ({c_in}) and output channels ({c_out})"
        )
    if weight.shape[1] * groups != c_in:
        raise ShapeError(
            f"{op}: input has {c_in} channels but weight expects {weight.shape[1] * groups} "
            f"(groups={groups}; weight shape {weight.shape} is (C_out, C_in / groups, *kernel))"
        )


def check_bias(op: str, bias: Tensor | None, c_out: int) -> None:
    if bias is not None and bias.shape[0] != c_out:
        raise ShapeError(f"{op}: bias must have shape ({c_out},) (one per output channel), got {bias.shape}")


def half_kernel_padding(op: str, padding: tuple[int, ...], kernel: tuple[int, ...]) -> None:
    if any(p > k // 2 for p, k in zip(padding, kernel)):
        raise ValueError(
            f"{op}: padding {padding} must be at most half the kernel size {kernel} "
            f"(at most {tuple(k // 2 for k in kernel)})"
        )


def output_size_arg(op: str, value: Any, spatial: tuple[int, ...]) -> tuple[int, ...]:
    """Adaptive pool output size: an int or one entry per spatial dim (None keeps the input size)."""
    n = len(spatial)
    if isinstance(value, Sequence) and not isinstance(value, str):
        if len(value) != n:
            raise ValueError(f"{op}: output_size must be an int or {n} entries, got {value!r}")
        value = tuple(s if v is None else v for v, s in zip(value, spatial))
    return ints(op, value, n, "output_size", 1)
