"""Index checks on the device, reported at the next read or sync.

Checking an index tensor on the host would cost a device sync per gather/select/scatter/embedding. Instead
one element-wise kernel per index op wraps negative values, replaces an out-of-range value by 0 (so the op
never touches memory outside its tensor) and records the first failure in a two-word device buffer:
``[check id, bad value]``. Kernels on one stream run in issue order, so the first failing op wins. The
host keeps each pending check's message by id; a read or sync of the device copies the buffer along with
its results and raises ``IndexOutOfRangeError`` for the recorded check, then clears the flag, so the
device stays usable (an asynchronous error like CUDA's, but recoverable).

A check issued while a CUDA graph is captured (``_cublas.capturing_now``: fusion records index checks
in its streams on this backend) runs again, with the same id, at every launch of the graph: its
message is kept for good (up to ``_MAX_CAPTURED``), and while any such check exists every sync
fetches the record.
"""

from __future__ import annotations

import threading
from types import ModuleType

import numpy as np

from . import _cublas
from ._types import Kernel, Prim, Stream

# more pending checks than this and the next check waits for the device and reports right away, so the
# host-side message table stays bounded in code that issues index ops without ever reading
_MAX_PENDING = 4096
_MAX_CAPTURED = 4096  # messages of checks inside captured graphs kept (the oldest dropped past this)

_BODY = """
long long v = (long long)index;
long long w = (negative && v < 0) ? v + n : v;
if (w < 0 || w >= n) {
    unsigned long long* record = (unsigned long long*)&err[0];
    if (atomicCAS(record, 0ULL, (unsigned long long)check_id) == 0ULL) {
        record[1] = (unsigned long long)v;
    }
    w = 0;
}
y = (T)w;
"""

_kernel_lock = threading.Lock()
_kernel: list[Kernel] = []


def _check_kernel(cupy: ModuleType) -> Kernel:
    if not _kernel:
        with _kernel_lock:
            if not _kernel:
                _kernel.append(
                    cupy.ElementwiseKernel(
                        "T index, int64 n, bool negative, uint64 check_id",
                        "T y, raw uint64 err",  # an output: CuPy passes inputs as const
                        _BODY,
                        "burn_check_index",
                    )
                )
    return _kernel[0]


class IndexChecker:
    """The pending index checks of one device and stream."""

    def __init__(self, cupy: ModuleType, stream: Stream) -> None:
        import cupyx

        self._cupy = cupy
        self._stream = stream
        with stream:
            self._err = cupy.zeros(2, dtype=np.uint64)
        self._host = cupyx.empty_pinned((2,), dtype=np.uint64)  # async copies need pinned memory
        # zeroed: CuPy's pinned pool hands out used blocks, and a sync reads this before any fetch (a
        # stale record there raised an error no check of this device made)
        self._host[:] = 0
        self._messages: dict[int, str] = {}
        self._captured: dict[int, str] = {}  # checks inside CUDA graphs: they run at every launch
        self._next_id = 1
        self._fetched_upto = 0  # checks issued before the last fetch: the copied record covers them
        self._lock = threading.Lock()

    @property
    def pending(self) -> bool:
        return bool(self._messages or self._captured)

    def check(self, index: Prim, size: int, negative: bool, message: str) -> Prim:
        """Queue the check of ``index`` against ``size``; returns the wrapped, in-range index."""
        capturing = _cublas.capturing_now()
        if self._next_id > 1 and len(self._messages) >= _MAX_PENDING and not capturing:
            self.fetch()
            self._stream.synchronize()
            self.raise_if_failed()
        with self._lock:
            check_id = self._next_id
            self._next_id += 1
            self._messages[check_id] = message
            if capturing:
                self._captured[check_id] = message
                if len(self._captured) > _MAX_CAPTURED:
                    del self._captured[next(iter(self._captured))]
        kernel = _check_kernel(self._cupy)
        out = self._cupy.empty(index.shape, dtype=index.dtype)
        kernel(index, np.int64(size), bool(negative), np.uint64(check_id), out, self._err)
        return out

    def fetch(self) -> None:
        """Queue the copy of the failure record to the host (before the caller's stream sync)."""
        with self._lock:
            if not self._messages and not self._captured:
                return
            self._fetched_upto = self._next_id - 1
        self._err.data.copy_to_host_async(self._host.ctypes.data, self._host.nbytes, self._stream)

    def raise_if_failed(self) -> None:
        """After the stream sync that followed ``fetch``: raise for a recorded failure, clear the rest."""
        with self._lock:
            check_id, value = int(self._host[0]), int(self._host.view(np.int64)[1])
            message = self._messages.get(check_id) or self._captured.get(check_id, "")
            self._messages = {k: m for k, m in self._messages.items() if k > self._fetched_upto}
            if not check_id:
                return
            self._host[:] = 0
        with self._stream:
            self._err.fill(0)
        from burn import IndexOutOfRangeError

        raise IndexOutOfRangeError(
            f"{message.format(value=value)} (checked on the GPU, reported at the first read or "
            "sync after the op; the op used index 0 for that entry)"
        )
