"""Worker threads for the data loader: a bounded window of batches loading ahead of the consumer.

Batch ``k`` is always returned ``k``-th, whatever order the workers finish in, so a seed fixes the
batches exactly. This module is imported only when ``num_workers > 0``: with no workers nothing in
burn.data touches ``threading`` (Pyodide has no threads).
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

_THREAD_PREFIX = "burn-data-worker"

Job = Callable[[int, Sequence[int], Callable[[], bool]], Any]


class PrefetchIterator:
    """Yields ``job(k, batches[k], stopped)`` for each ``k`` in order, computed by ``num_workers``
    threads at most ``prefetch`` batches ahead. ``close()`` (also on exhaustion, on error, on garbage
    collection and on leaving a ``with`` block) stops the workers and joins their threads."""

    def __init__(self, job: Job, batches: Sequence[Sequence[int]], num_workers: int, prefetch: int) -> None:
        self._job = job
        self._batches = batches
        self._window = max(prefetch, 1)
        self._stop = threading.Event()
        self._pending: deque[Future[Any]] = deque()
        self._submitted = 0
        self._pool: ThreadPoolExecutor | None = ThreadPoolExecutor(
            max_workers=num_workers, thread_name_prefix=_THREAD_PREFIX
        )
        self._fill()

    def _fill(self) -> None:
        assert self._pool is not None
        while len(self._pending) < self._window and self._submitted < len(self._batches):
            k = self._submitted
            self._pending.append(self._pool.submit(self._job, k, self._batches[k], self._stop.is_set))
            self._submitted += 1

    def __iter__(self) -> PrefetchIterator:
        return self

    def __next__(self) -> Any:
        if self._pool is None or not self._pending:
            self.close()
            raise StopIteration
        future = self._pending.popleft()
        try:
            batch = future.result()
        except BaseException:
            # An item or the batcher failed (or the consumer was interrupted while waiting): stop the
            # epoch here; the exception, raised in the worker, propagates in the consumer's thread.
            self.close()
            raise
        self._fill()
        return batch

    def __len__(self) -> int:
        """Batches not yet returned."""
        return len(self._batches) - self._submitted + len(self._pending) if self._pool else 0

    def close(self) -> None:
        """Stop loading: cancel queued batches, let running ones end early, join the worker threads."""
        pool, self._pool = self._pool, None
        if pool is None:
            return
        self._stop.set()
        for future in self._pending:
            future.cancel()
        self._pending.clear()
        # A worker thread never waits for itself (possible only if the iterator is collected there).
        pool.shutdown(
            wait=not threading.current_thread().name.startswith(_THREAD_PREFIX), cancel_futures=True
        )

    def __enter__(self) -> PrefetchIterator:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:  # interpreter shutdown: modules may be gone
            pass
