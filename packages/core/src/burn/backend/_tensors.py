"""Turning a backend's primitive into a ``burn.Tensor``, for backends and decorators that hand tensors
to users (interop such as ``burn_cuda.from_dlpack``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .._dtype import DType
    from .._tensor import Tensor


def from_primitive(primitive: Any, backend: Any, dtype: DType | None = None) -> Tensor:
    """A ``burn.Tensor`` around ``primitive``, a value of ``backend`` (Burn's ``Tensor::from_primitive``).

    ``backend`` is the instance the primitive belongs to (``device.backend``; on an autodiff device,
    wrap the inner value with ``backend.from_inner(p)`` first). ``dtype``, when the caller knows it,
    saves a ``backend.dtype_of`` query. ``tensor.primitive`` is the inverse.

    >>> t = from_primitive(np.ones((2, 3), np.float32), burn.device("cpu").backend)   # shape (2, 3)
    """
    from .._tensor import _wrap  # burn._tensor imports this package: bind at call time

    return _wrap(primitive, backend, dtype)
