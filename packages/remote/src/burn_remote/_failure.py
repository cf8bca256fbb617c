"""Failure handling of a session: poisoned tensors, the error reported later, and ERROR frames.

An op that fails poisons its outputs: the tensor table holds a ``Failed`` in their place, so ops reading
them fail the same way without running and reading them raises the error. The first error since the
last read or sync is kept and reported by the next read or sync (as a device backend reports an
asynchronous error); an op whose input already failed does not report again.

``Failed`` is ``burn.backend.Failed``, the slot burn's fusion decorator also keeps for a lazy node whose
stream raised: one idea, one class. A session sends the original error's type and message to the client.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from burn.backend import Failed

from ._protocol import ERROR, frame

if TYPE_CHECKING:
    from ._table import Meta, TensorTable


def error_frame(kind: str, exc: BaseException) -> bytes:
    """An ERROR frame: ``kind`` ("auth", "protocol", "op", "limit"), the exception's type and message."""
    return frame(ERROR, {"kind": kind, "type": type(exc).__name__, "message": str(exc)[:4000]})


class Failures:
    """The failures of one session's ops: poisoning their outputs in ``table``, and the first error
    since the last read or sync, for that read or sync to report."""

    __slots__ = ("first_error", "table")

    def __init__(self, table: TensorTable) -> None:
        self.table = table
        self.first_error: BaseException | None = None

    def fail(self, error: BaseException) -> None:
        """Remember ``error`` for the next read or sync (unless an earlier one is waiting)."""
        if self.first_error is None:
            self.first_error = error

    def poison(self, outputs: Iterable[tuple[int, Meta]], error: BaseException, report: bool) -> None:
        """The tensors ``outputs`` (id, meta) hold ``error``; it is reported once unless ``report`` is
        False (an input that already failed was reported when it failed). Poisoned tensors hold no
        memory: they are not counted in the table's live bytes."""
        prims, metas = self.table.prims, self.table.metas
        for tid, m in outputs:
            prims[tid] = Failed(error)
            metas[tid] = m
        if report:
            self.fail(error)

    def report(self) -> bytes:
        """The ERROR frame of the waiting error, which is then forgotten."""
        error, self.first_error = self.first_error, None
        assert error is not None
        return error_frame("op", error)
