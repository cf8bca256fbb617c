"""Per-thread work buffers of the numpy conv engine: scratch buffers reused between calls (one per name
and thread), zero-bordered buffers kept per shape, and typed views into raw buffers.

Fresh multi-MB buffers cost a page fault per 4 KiB page on every call, so the engine's window matrices,
GEMM results and padded inputs live in these kept buffers; every cache is thread-local, so threads of
a split batch (``_threads``) never share one.
"""

from __future__ import annotations

import threading
from types import ModuleType
from typing import Any

Ints = tuple[int, ...]
Array = Any  # a numpy array, or a CuPy one (non-numpy namespaces get fresh buffers)

_SCRATCH_MAX_BYTES = 1 << 25  # a larger request is served fresh, not kept (32 MiB per name and thread)
_scratch_local = threading.local()


def _scratch(xp: ModuleType, name: str, size: int, dtype: Any) -> Array:
    """A reusable 1-d work buffer of ``size`` elements (contents undefined), one per name and thread.

    Only for values that do not outlive the op that asks: the next request of the same name reuses
    the memory."""
    nbytes = size * xp.dtype(dtype).itemsize
    if nbytes > _SCRATCH_MAX_BYTES or xp.__name__ != "numpy":
        return xp.empty(size, dtype=dtype)
    pool = getattr(_scratch_local, "pool", None)
    if pool is None:
        pool = _scratch_local.pool = {}
    buf = pool.get(name)
    if buf is None or buf.nbytes < nbytes:
        buf = pool[name] = xp.empty(max(nbytes, 1 << 16), dtype=xp.uint8)
    return buf[:nbytes].view(dtype)


_PADDED_KEPT = 12  # zero-bordered buffers kept per thread, one per padded shape (least recently used out)
_PADDED_MAX_BYTES = 1 << 24  # a larger padded input is built fresh each call


def _kept_zeros(xp: ModuleType, key: tuple[Any, ...], size: int, dtype: Any) -> tuple[Array, dict[Any, Any]]:
    """A flat buffer of ``size`` elements, zeroed when made and kept per thread under ``key`` (the
    ``_PADDED_KEPT`` most recent, each at most ``_PADDED_MAX_BYTES``; larger: fresh each call), so
    what its owner never writes (a padded buffer's borders) stays zero; and a dict kept (and dropped)
    with it, for views into it."""
    if size * xp.dtype(dtype).itemsize > _PADDED_MAX_BYTES or xp.__name__ != "numpy":
        return xp.zeros(size, dtype=dtype), {}
    kept = getattr(_scratch_local, "padded", None)
    if kept is None:
        kept = _scratch_local.padded = {}
    entry = kept.pop(key, None)
    if entry is None:
        entry = (xp.zeros(size, dtype=dtype), {})
        while len(kept) >= _PADDED_KEPT:
            kept.pop(next(iter(kept)))
    kept[key] = entry  # most recently used last
    return entry


def _scratch_base(xp: ModuleType, name: str, nbytes: int) -> Array:
    """The raw (uint8) buffer behind ``_scratch(name)``, at least ``nbytes`` long: the same object
    between calls until a larger request replaces it, so views into it can be kept."""
    pool = getattr(_scratch_local, "pool", None)
    base = None if pool is None else pool.get(name)
    if base is not None and base.nbytes >= nbytes:
        return base
    _scratch(xp, name, nbytes, xp.uint8)
    base = getattr(_scratch_local, "pool", {}).get(name)
    if base is None or base.nbytes < nbytes:  # served fresh (too large, or not numpy)
        return xp.empty(nbytes, dtype=xp.uint8)
    return base


def _view(xp: ModuleType, base: Array, dtype: Any, offset: int, shape: Ints, strides: Ints) -> Array:
    """A view of ``base`` (element offset and strides in elements of ``dtype``)."""
    item = xp.dtype(dtype).itemsize
    return xp.ndarray(shape, dtype, base, offset * item, tuple(s * item for s in strides))
