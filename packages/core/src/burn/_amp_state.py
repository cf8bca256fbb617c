"""The per-thread state of ``burn.amp`` and the casts its hooks make (private; ``burn.amp`` is the face).

The frontend reads ``STATE.on`` once per matmul-heavy op (matmul, linear, conv, conv_transpose) and
per float32-only op (softmax, log_softmax, losses, norms, sum/mean/prod/var of half tensors): 0, the
default, means no autocast is open in any thread and nothing else happens; otherwise this thread's
``LOCAL.dtype`` decides. Kept free of other burn imports at module
level so that ``_tensor_math`` can import it without a cycle.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any

from . import _dtype as D

if TYPE_CHECKING:
    from ._tensor import Tensor

HALVES = frozenset({D.float16, D.bfloat16})


class _Local(threading.local):
    """Per thread: ``dtype``, the autocast dtype (None: off); ``loss_scale``, the seed of
    ``Tensor.backward()`` without an explicit seed (None: ones), set by ``GradScaler.scaled_backward``."""

    dtype: D.DType | None = None
    loss_scale: float | None = None


class _Flag:
    """``on``: how many autocast contexts are open in any thread. The hooks test this plain attribute
    first (a few ns) and read the thread-local dtype only when it is non-zero."""

    __slots__ = ("on",)

    def __init__(self) -> None:
        self.on = 0


LOCAL = _Local()
STATE = _Flag()
_LOCK = threading.Lock()


def enter(dtype: D.DType | None) -> D.DType | None:
    """Set this thread's autocast dtype; returns the previous one (for ``leave``)."""
    with _LOCK:
        STATE.on += 1
    saved, LOCAL.dtype = LOCAL.dtype, dtype
    return saved


def leave(saved: D.DType | None) -> None:
    LOCAL.dtype = saved
    with _LOCK:
        STATE.on -= 1


def check_device(op: str, dtype: D.DType, backend: Any) -> None:
    """A clear error when ``backend`` cannot hold ``dtype`` (bfloat16 on wgpu, on numpy without
    ml_dtypes or on CuPy < 14; float16 on a wgpu adapter without ``shader-f16``)."""
    if dtype in backend.dtypes:
        return
    from ._errors import DTypeError

    floats = sorted(d.name for d in backend.dtypes if d.is_float)
    if D.float16 in backend.dtypes:
        hint = "use burn.amp.autocast('float16') (mixed_precision('float16')) instead"
    else:
        hint = "this device has no half dtype: train in float32 (no mixed precision)"
    from .backend._base import dtype_note

    note = dtype_note(backend, dtype)
    raise DTypeError(
        f"{op}: autocast dtype {dtype.name} is not supported on device {backend.device} "
        f"(backend {backend.name!r}; its float dtypes: {', '.join(floats)}"
        + (f"; {note}" if note else "")
        + f"); {hint}"
    )


def to_half(op: str, t: Tensor) -> Tensor:
    """``t`` in the autocast dtype when it is a float tensor of another dtype (float32 master weights
    and activations); ints, bools and tensors already in that dtype pass through. The cast is an
    autodiff op, so gradients flow back in ``t``'s own dtype."""
    dt = LOCAL.dtype
    src = t.dtype
    if dt is None or src is dt or not src.is_float:
        return t
    check_device(op, dt, t._b)
    return t.cast(dt)


def to_float32(t: Tensor) -> Tensor:
    """Under autocast, a half tensor as float32 (the float32-only ops); anything else unchanged."""
    if LOCAL.dtype is not None and t.dtype in HALVES:
        return t.cast(D.float32)
    return t
