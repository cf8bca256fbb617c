"""The tensor table of one session: the client's tensors by id, their shapes and dtypes, the bytes held.

Ids are the client's (a session's ids never name another session's tensors). An entry is the backend's
primitive, or a ``Failed`` for a tensor whose op failed (``_failure``); either way its ``Meta`` says the
shape and dtype the client declared for it.
"""

from __future__ import annotations

import math
from typing import Any

from burn.backend import DType

from ._failure import Failed

_INTERNED_MAX = 8192  # (shape, dtype) pairs kept per session; a miss later only costs the full checks


def nbytes(shape: tuple[int, ...], dtype: DType) -> int:
    """Bytes a tensor of ``shape`` and ``dtype`` holds."""
    return math.prod(shape) * dtype.itemsize


class Meta:
    """The shape, dtype and size of a live tensor, interned per session (one object per (shape, dtype)):
    plan keys hold it by identity, so a repeated signature hashes cheaply, and storing an op's outputs
    builds no per-tensor object."""

    __slots__ = ("dtype", "nbytes", "shape")

    def __init__(self, shape: tuple[int, ...], dtype: DType) -> None:
        self.shape = shape
        self.dtype = dtype
        self.nbytes = nbytes(shape, dtype)


class TensorTable:
    """The tensors of one session: ``prims`` (id -> primitive or ``Failed``), ``metas`` (id -> ``Meta``,
    of every id in ``prims``), ``live_bytes`` (held by the primitives that are not failed) and ``limit``
    (the most ``live_bytes`` may reach: the server's ``--max-session-mib``)."""

    __slots__ = ("_interned", "limit", "live_bytes", "metas", "prims")

    def __init__(self, limit: int) -> None:
        self.prims: dict[int, Any] = {}
        self.metas: dict[int, Meta] = {}
        self.live_bytes = 0
        self.limit = limit
        self._interned: dict[tuple[tuple[int, ...], DType], Meta] = {}

    def meta(self, shape: tuple[int, ...], dtype: DType) -> Meta:
        """The interned ``Meta`` of ``shape`` and ``dtype``."""
        interned = self._interned
        m = interned.get((shape, dtype))
        if m is None:
            if len(interned) > _INTERNED_MAX:
                interned.clear()
            m = interned[(shape, dtype)] = Meta(shape, dtype)
        return m

    def store(self, tid: int, prim: Any, m: Meta) -> None:
        """Tensor ``tid`` is ``prim`` (of ``m``'s shape and dtype)."""
        self.prims[tid] = prim
        self.metas[tid] = m
        self.live_bytes += m.nbytes

    def drop(self, ids: tuple[int, ...]) -> None:
        """Free the tensors ``ids`` (the client dropped them; unknown ids are ignored)."""
        prims, metas = self.prims, self.metas
        for tid in ids:
            prim = prims.pop(tid, None)
            if prim is not None:
                m = metas.pop(tid)
                if type(prim) is not Failed:  # poisoned entries hold no memory
                    self.live_bytes -= m.nbytes

    def clear(self) -> None:
        """Free every tensor."""
        self.prims.clear()
        self.metas.clear()
        self.live_bytes = 0
