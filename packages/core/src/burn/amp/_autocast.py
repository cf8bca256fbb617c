"""``burn.amp.autocast``: run the matmul-heavy ops in half precision, the sensitive ones in float32.

The rules (as PyTorch's autocast, per thread):

=====================================================  ==========================================
ops                                                    under ``autocast(dtype)``
=====================================================  ==========================================
matmul / ``@``, ``F.linear`` (bias too), conv1d/2d/3d,  float inputs are cast to ``dtype``; the op
conv_transpose1d/2d/3d (so Linear, Conv*, attention's   runs and returns ``dtype``
score and context matmuls)
softmax, log_softmax, softplus, every loss, every norm  half inputs are cast to float32; the op runs
(layer/batch/group/instance/rms), sum/mean/prod/var     and returns float32
element-wise ops on mixed operands                      promote (half op float32 -> float32)
everything else                                         runs in its input dtype
=====================================================  ==========================================

The casts are ordinary (differentiable) casts: the gradient of a float32 leaf used through a half op
comes back as float32, so master weights and optimizer state stay float32.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from types import TracebackType
from typing import Any, TypeVar

from .. import _dtype as D
from .._amp_state import HALVES, LOCAL, check_device, enter, leave

F = TypeVar("F", bound=Callable[..., Any])


def _half_dtype(op: str, dtype: Any) -> D.DType:
    try:
        dt = D.dtype(dtype)
    except TypeError:
        dt = None
    if dt not in HALVES:
        raise ValueError(f"{op}: dtype must be 'float16' or 'bfloat16', got {dtype!r}")
    assert dt is not None
    return dt


class autocast:
    """Mixed precision for the ops run inside: matmul-heavy ops in ``dtype``, sensitive ops in float32.

    ``dtype``: ``"float16"`` (numpy, CUDA, wgpu with ``shader-f16``) or ``"bfloat16"`` (numpy with
    ml_dtypes, CUDA with CuPy >= 14; not wgpu: WGSL has no bfloat16). ``device``: check now that it supports ``dtype`` (otherwise the first op on a device that
    lacks it raises ``burn.DTypeError``). ``enabled=False`` turns autocast off inside (nesting).
    Also a decorator. The setting is per thread and restored on exit.

    >>> x, w = burn.ones((2, 3)), burn.ones((3, 4))
    >>> with burn.amp.autocast("float16"):
    ...     y = x @ w                                   # runs in float16
    ...     p = burn.nn.functional.softmax(y, dim=1)    # runs in float32
    >>> y.dtype, p.dtype, (y + x.sum()).dtype          # mixed operands promote
    (burn.float16, burn.float32, burn.float32)
    >>> with burn.amp.autocast("bfloat16", device="cpu"):   # float32 accumulation, bfloat16 result
    ...     (x @ w).dtype
    burn.bfloat16
    """

    def __init__(self, dtype: D.DTypeLike = "float16", *, enabled: bool = True, device: Any = None) -> None:
        self.dtype = _half_dtype("autocast", dtype)
        self.enabled = bool(enabled)
        if device is not None:
            from .._device import device as as_device

            check_device("autocast", self.dtype, as_device(device).backend)
        self._saved: list[D.DType | None] = []

    def __enter__(self) -> autocast:
        self._saved.append(enter(self.dtype if self.enabled else None))
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        leave(self._saved.pop())

    def __call__(self, fn: F) -> F:
        """Use as a decorator: ``fn`` runs under this autocast."""

        @functools.wraps(fn)
        def wrapped(*args: Any, **kwargs: Any) -> Any:
            with autocast(self.dtype, enabled=self.enabled):
                return fn(*args, **kwargs)

        return wrapped  # type: ignore[return-value]

    def __repr__(self) -> str:
        return f"autocast({self.dtype.name!r}, enabled={self.enabled})"


def autocast_dtype() -> D.DType | None:
    """The dtype autocast runs matmul-heavy ops in on this thread, or None when it is off.

    >>> burn.amp.autocast_dtype() is None
    True
    >>> with burn.amp.autocast("float16"):
    ...     burn.amp.autocast_dtype()
    burn.float16
    """
    return LOCAL.dtype


def is_autocast_enabled() -> bool:
    """Whether autocast is on in this thread.

    >>> burn.amp.is_autocast_enabled()
    False
    """
    return LOCAL.dtype is not None
