"""Argument checks done once in the frontend, so backends never repeat them. Each error names the op,
the argument, what was expected and what was received."""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from ._errors import DimError, ShapeError

_Fn = TypeVar("_Fn", bound=Callable[..., Any])


def keyword_aliases(**aliases: str) -> Callable[[_Fn], _Fn]:
    """Also accept keyword ``alias=`` for parameter ``name`` (``aliases = {alias: name}``).

    API.md (binding) spells some arguments as Burn does (``chunk(n, dim)``, ``tril(k)``) where the code
    keeps PyTorch's names (``chunks``, ``diagonal``); both keywords work, giving both is a TypeError.
    Positional calls skip the lookup.
    """

    def decorate(fn: _Fn) -> _Fn:
        @functools.wraps(fn)
        def method(*args: Any, **kwargs: Any) -> Any:
            if kwargs:
                for alias, name in aliases.items():
                    if alias in kwargs:
                        if name in kwargs:
                            raise TypeError(
                                f"{fn.__name__}: got both {name}= and its alias {alias}=; pass one"
                            )
                        kwargs[name] = kwargs.pop(alias)
            return fn(*args, **kwargs)

        return method  # type: ignore[return-value]

    return decorate


def norm_dim(op: str, dim: int, ndim: int, arg: str = "dim") -> int:
    if not isinstance(dim, int) or isinstance(dim, bool):
        raise TypeError(f"{op}: {arg} must be an int, got {type(dim).__name__}")
    lo, hi = (-ndim, ndim - 1) if ndim else (-1, 0)
    if not lo <= dim <= hi:
        raise DimError(f"{op}: {arg}={dim} out of range for a tensor of rank {ndim} (expected {lo}..{hi})")
    return dim + ndim if dim < 0 else dim


def norm_dims(op: str, dims: int | Sequence[int] | None, ndim: int, arg: str = "dim") -> tuple[int, ...]:
    """Normalise ``None`` (all dims), an int or a sequence of ints to sorted unique non-negative dims."""
    if dims is None:
        return tuple(range(ndim))
    if isinstance(dims, int):
        return (norm_dim(op, dims, ndim, arg),)
    if not isinstance(dims, (tuple, list)):
        raise TypeError(f"{op}: {arg} must be an int, a tuple of ints or None, got {type(dims).__name__}")
    out = tuple(norm_dim(op, d, ndim, arg) for d in dims)
    if len(set(out)) != len(out):
        raise ValueError(f"{op}: {arg}={tuple(dims)} repeats a dim")
    return tuple(sorted(out))


def shape_arg(op: str, shape: Sequence[int] | tuple, arg: str = "shape") -> tuple[int, ...]:
    """Accept ``f(2, 3)`` or ``f((2, 3))``; every entry a non-negative int."""
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        shape = shape[0]
    out = []
    for s in shape:
        if hasattr(s, "__index__") and not isinstance(s, bool):
            s = s.__index__()
        else:
            raise TypeError(f"{op}: {arg} entries must be ints, got {s!r} in {tuple(shape)}")
        out.append(s)
    return tuple(out)


def check_non_negative_shape(op: str, shape: tuple[int, ...], arg: str = "shape") -> tuple[int, ...]:
    if any(s < 0 for s in shape):
        raise ShapeError(f"{op}: {arg} must have non-negative sizes, got {shape}")
    return shape


def infer_reshape(op: str, old: tuple[int, ...], new: tuple[int, ...]) -> tuple[int, ...]:
    numel = 1
    for s in old:
        numel *= s
    unknown = [i for i, s in enumerate(new) if s == -1]
    if len(unknown) > 1:
        raise ShapeError(f"{op}: only one -1 is allowed in shape, got {new}")
    if any(s < -1 for s in new):
        raise ShapeError(f"{op}: shape entries must be >= -1, got {new}")
    known = 1
    for s in new:
        if s != -1:
            known *= s
    if unknown:
        if known == 0 or numel % known:
            raise ShapeError(f"{op}: cannot reshape a tensor of shape {old} ({numel} elements) to {new}")
        new = tuple(numel // known if s == -1 else s for s in new)
    elif known != numel:
        raise ShapeError(
            f"{op}: cannot reshape a tensor of shape {old} ({numel} elements) to {new} ({known} elements)"
        )
    return new
