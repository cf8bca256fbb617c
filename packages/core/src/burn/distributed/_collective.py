"""The collective interface the data-parallel strategy talks to, and the bounded wait behind it.

Implemented by burn-train's ``MpiCollective`` (host numpy buffers, any backend, any machine) and by the
device collectives backend plugins register (``burn_register_collectives``: burn-cuda's NCCL over CuPy
device buffers on NVIDIA GPUs). Every operation is started non-blocking and
returns a ``Work``; ``Work.wait()`` polls it until it completes or the collective's ``timeout``
passes, then raises ``CollectiveTimeoutError`` naming the rank and the operation. A dead or hung rank
therefore never makes the others wait forever. Python objects (records, metric items) always travel
over MPI as pickles, whatever moves the tensors.
"""

from __future__ import annotations

import os
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from typing import Any

from ._errors import CollectiveTimeoutError

OPS = ("sum", "mean", "max", "min")


def check_op(op: str) -> str:
    """``op`` if it is a reduction every collective offers (``OPS``), else a ``ValueError``.

    >>> from burn.distributed import check_op
    >>> check_op("mean")
    'mean'
    """
    if op not in OPS:
        raise ValueError(f"collective: op must be one of {', '.join(OPS)}, got {op!r}")
    return op


def check_root(root: int, size: int) -> int:
    """``root`` if it is a rank of a job of ``size`` ranks, else a ``ValueError``.

    >>> from burn.distributed import check_root
    >>> check_root(1, size=2)
    1
    """
    if not isinstance(root, int) or not 0 <= root < size:
        raise ValueError(f"collective: root must be a rank in 0..{size - 1}, got {root!r}")
    return root


def poll(
    done: Callable[[], bool], timeout: float, describe: Callable[[], str], on_timeout: Callable[[], None]
) -> None:
    """Call ``done()`` until it is True; after ``timeout`` seconds call ``on_timeout()`` and raise.

    For the first ``SPIN_S`` seconds it tests back to back, yielding the core between tests: MPI
    moves a collective on only inside its tests, and a GPU's event is done the moment its kernels
    are, so a sleeping waiter adds its pause to the wait (pauses of up to 1 ms made a 1 MiB MPI
    all-reduce over 2 ranks take 2-5x as long as mpi4py's blocking ``Allreduce``; 1.05-1.25x now).
    After that, a collective waiting on a slow rank sleeps with a growing pause of at most 1 ms,
    leaving the cores to the ranks still computing.
    """
    if done():
        return
    start = time.monotonic()
    deadline = start + timeout
    spin_until = start + SPIN_S
    pause = 0.0
    while not done():
        now = time.monotonic()
        if now > deadline:
            on_timeout()
            raise CollectiveTimeoutError(
                f"{describe()} did not complete within {timeout:g} s: another rank died, hung, or skipped "
                "this collective; the job is aborted (the wait is BURN_DDP_TIMEOUT or "
                "LearnerBuilder.distributed(timeout=...))"
            )
        if now < spin_until:
            _yield()
        else:
            pause = min(1e-3, pause * 2 if pause else 2e-5)
            time.sleep(pause)
    return


SPIN_S = 0.05  # how long a wait tests back to back before it starts sleeping
_yield = getattr(os, "sched_yield", lambda: time.sleep(0))


class Work:
    """A collective in flight: ``done()`` tests it (and drives MPI's progress), ``wait()`` waits for it
    within the collective's timeout and returns its result (the buffer written).

    ``test()`` says whether the operation completed; after ``timeout`` seconds ``on_timeout()`` runs and
    ``CollectiveTimeoutError`` names ``what``; ``finish()`` (optional) computes the result once done.

    >>> from burn.distributed import Work
    >>> Work(lambda: True, "reduced", 5.0, "rank 0/1: all_reduce", lambda: None).wait()
    'reduced'
    """

    def __init__(
        self,
        test: Callable[[], bool],
        result: Any,
        timeout: float,
        what: str,
        on_timeout: Callable[[], None],
        finish: Callable[[], Any] | None = None,
    ) -> None:
        self._test = test
        self._result = result
        self._timeout = timeout
        self._what = what
        self._on_timeout = on_timeout
        self._finish = finish
        self._completed = False

    def done(self) -> bool:
        if not self._completed and self._test():
            self._complete()
        return self._completed

    def _complete(self) -> None:
        self._completed = True
        if self._finish is not None:
            self._result = self._finish()

    def wait(self) -> Any:
        if not self._completed:
            poll(self._test, self._timeout, lambda: self._what, self._on_timeout)
            self._complete()
        return self._result


class Collective(ABC):
    """All-reduce, broadcast, all-gather and barrier among ``size`` ranks; this process is ``rank``.

    Buffers are arrays of the implementation's kind (numpy for MPI, CuPy for NCCL), reduced and
    broadcast in place. ``host`` is the MPI collective that carries Python objects (itself for MPI).

    >>> from burn.distributed import Collective
    >>> sorted(Collective.__abstractmethods__)
    ['all_gather', 'all_reduce_async', 'barrier', 'broadcast_async', 'host']
    """

    name: str = "collective"
    rank: int = 0
    size: int = 1
    timeout: float = 600.0

    @property
    @abstractmethod
    def host(self) -> Any:
        """The collective that moves pickled objects among the same ranks (burn-train's ``MpiCollective``)."""

    @abstractmethod
    def all_reduce_async(self, buf: Any, op: str = "sum") -> Work:
        """Start reducing ``buf`` over the ranks in place (``op``: sum, mean, max, min)."""

    @abstractmethod
    def broadcast_async(self, buf: Any, root: int = 0) -> Work:
        """Start copying ``buf`` of rank ``root`` into ``buf`` of every rank."""

    @abstractmethod
    def all_gather(self, buf: Any) -> Any:
        """An array of shape ``(size, *buf.shape)``: row ``r`` is ``buf`` of rank ``r``."""

    @abstractmethod
    def barrier(self) -> None:
        """Return once every rank has called ``barrier``."""

    def all_reduce(self, buf: Any, op: str = "sum") -> Any:
        """Reduce ``buf`` over the ranks in place and return it."""
        return self.all_reduce_async(buf, op).wait()

    def broadcast(self, buf: Any, root: int = 0) -> Any:
        """Rank ``root``'s ``buf`` on every rank (in place); returns it."""
        return self.broadcast_async(buf, root).wait()

    def broadcast_object(self, obj: Any, root: int = 0) -> Any:
        """Rank ``root``'s ``obj`` (pickled) on every rank."""
        return self.host.broadcast_object(obj, root)

    def gather_object(self, obj: Any, root: int = 0) -> list[Any] | None:
        """Every rank's ``obj`` in rank order on ``root``; None on the other ranks."""
        return self.host.gather_object(obj, root)

    def mark_failed(self) -> None:  # noqa: B027 (optional: only a host that must abort records it)
        """A collective among these ranks timed out and cannot be cancelled: the process must end the job
        (MPI's ``Abort``) instead of shutting down cleanly. Device collectives call it on their host."""

    def close(self) -> None:  # noqa: B027 (optional: most collectives hold nothing to release)
        """Release what the collective holds (communicators); it cannot be used afterwards."""

    def __repr__(self) -> str:
        return f"{type(self).__name__}(rank={self.rank}, size={self.size}, timeout={self.timeout:g})"


class DeviceCollective(Collective):
    """A collective over buffers on the devices themselves (NCCL over CuPy arrays), queued in order with
    the device's kernels: after those that produce a buffer and before those that read the result, so
    a caller may go on without waiting for it (a later ``Work.wait()`` still bounds it). Gradients move
    through ``pack`` and ``unpack`` without leaving the device.

    >>> from burn.distributed import DeviceCollective
    >>> sorted(DeviceCollective.__abstractmethods__ - Collective.__abstractmethods__)
    ['pack', 'unpack']
    """

    @abstractmethod
    def pack(self, flat: Any, scale: float) -> Any:
        """A buffer of this collective's kind that it may reduce in place: a copy of ``flat`` (a 1-d
        ``burn.Tensor`` on this rank's device) times ``scale``."""

    @abstractmethod
    def unpack(
        self, buf: Any, scale: float, parts: Sequence[tuple[int, int, tuple[int, ...]]], device: Any
    ) -> list[Any]:
        """``buf`` times ``scale`` (in place), as ``burn.Tensor`` views on ``device`` without copies: one
        per ``(offset, size, shape)`` in ``parts``."""
