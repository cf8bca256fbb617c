"""Tuning in the background: the queue of tuning jobs, drained at step boundaries within a time budget.

With ``BURN_AUTOTUNE`` at ``full`` or ``fast`` and ``BURN_AUTOTUNE_BLOCKING`` unset, the first call of a
key runs the family's picked candidate at once and queues a ``TuneJob`` here. ``tune_pending`` runs jobs
a unit at a time (one candidate's check or timing) until its budget is spent (``BURN_AUTOTUNE_BUDGET_MS``,
default 50 ms; a unit that starts before the budget runs out finishes, and every call runs at least one
unit when any can run, so tuning always progresses). ``burn.fusion.mark_step``, the optimizers' ``step``
and burn-train's Learner call it where a step ends. No threads: Pyodide runs it as is, and the order of
the work is the order of the calls.

Arguments: a job holds the arguments of a call of its key, not copies, so a drain tunes on real inputs
of the right shapes, strides and dtypes without knowing how a backend makes them. A drain releases the
arguments of every job whose key was not called since the drain before it, so a job never holds a
tensor from a step older than the last one; the next call of the key arms the job again. Held buffers may
be written between drains (by a replayed graph that lent them, or by fusion reusing a dead input), so
the reference runs again at each drain before the next check.

A job's progress (candidates checked or dropped, timings made) is stored in the cache after each drain
that advanced it, as an entry without a winner: the next process goes on from there.

When a job settles, its winner is the key's candidate from the next call on; if that differs from the
candidate in use, ``generation()`` grows, and programs that baked the old choice in (fusion's replayed
programs, recorded wgpu command lists, CUDA graphs) are planned again.
"""

from __future__ import annotations

import contextlib
import math
import os
import threading
import time
import warnings
from collections.abc import Iterator

from ._job import TuneJob

_queue: list[TuneJob] = []
_lock = threading.RLock()
_drains = 0  # drains so far: a job's arguments from before the last drain are released
_generation = 0
_draining = False


def budget_seconds() -> float:
    """``BURN_AUTOTUNE_BUDGET_MS`` in seconds (default 50 ms): the time ``tune_pending`` spends per call."""
    raw = os.environ.get("BURN_AUTOTUNE_BUDGET_MS", "").strip()
    if not raw:
        return 0.05
    try:
        value = float(raw)
    except ValueError:
        raise ValueError(f"BURN_AUTOTUNE_BUDGET_MS: expected milliseconds (a number), got {raw!r}") from None
    if not value >= 0:
        raise ValueError(f"BURN_AUTOTUNE_BUDGET_MS: expected milliseconds >= 0, got {raw!r}")
    return value / 1000


def generation() -> int:
    """How many times a background tuning run switched a key to another candidate in this process.

    A program that baked a tuned choice in (a fused matmul's kernel, a replayed fusion program, a recorded
    command list, a CUDA graph) notes the generation it was planned under and is planned again when it
    changed.

    >>> from burn import autotune
    >>> g = autotune.generation()
    >>> autotune.generation() >= g
    True
    """
    return _generation


def pending() -> int:
    """How many tuning jobs wait for ``tune_pending`` (keys running their picked candidate meanwhile).

    >>> from burn import autotune
    >>> autotune.wait() >= 0 and autotune.pending() == 0
    True
    """
    return len(_queue)


_calls = 0  # calls of keys tuning in the background so far (``tuning_calls``)


def tuning_calls() -> int:
    """How many calls met a key still tuning in the background so far: fusion compares it around a
    program's run and captures no graph of a program that made one (a graph would make no calls, so the
    job would get no inputs, and a switch would drop the graph anyway)."""
    return _calls


_stand_in = threading.local()


@contextlib.contextmanager
def stand_ins() -> Iterator[None]:
    """Calls made in this block (on this thread) run on stand-in values (fusion's compile-ahead
    planning pass): a key not chosen yet runs its cached winner or its picked candidate without
    choosing it, and no tuning job is started or given these arguments."""
    _stand_in.on = True
    try:
        yield
    finally:
        _stand_in.on = False


def standing_in() -> bool:
    """Whether this thread is in a ``stand_ins`` block."""
    return getattr(_stand_in, "on", False)


def enqueue(job: TuneJob) -> None:
    global _calls
    with _lock:
        job.armed = _drains
        _queue.append(job)
        _calls += 1


def arm(job: TuneJob, args: tuple) -> None:
    """A call of a pending job's key: it takes these arguments if it holds none from this step."""
    global _calls
    _calls += 1
    if job.args is None or job.armed < _drains:
        job.arm(args, _drains)


def switched() -> None:
    """A key now runs another candidate than before: programs planned with the old one are stale."""
    global _generation
    _generation += 1


def tune_pending(budget_s: float | None = None) -> int:
    """Run queued tuning jobs for about ``budget_s`` seconds (default ``BURN_AUTOTUNE_BUDGET_MS``, 50 ms);
    returns how many jobs settled (their winners are used from the next call of their keys on).

    Called where a step ends (``burn.fusion.mark_step``, the optimizers' ``step``, burn-train's Learner).
    A job runs a unit at a time (one candidate checked or timed); a unit that starts within the budget
    finishes, and a call with anything to run runs at least one unit.

    >>> from burn import autotune
    >>> autotune.tune_pending(0.01) >= 0
    True
    """
    global _drains, _draining
    budget = budget_seconds() if budget_s is None else float(budget_s)
    if math.isnan(budget) or budget < 0:
        raise ValueError(f"tune_pending: budget_s must be >= 0 seconds, got {budget_s!r}")
    with _lock:
        if _draining:  # a candidate that ends a step itself: its drain is this one
            return 0
        _draining = True
        try:
            settled = _drain(budget)
        finally:
            _draining = False
            for job in _queue:
                if job.args is not None and job.armed < _drains:
                    job.release()
                else:
                    job.invalidate()
                if job.progressed:  # kept in the cache: a process that ends first leaves it to the next
                    job.tuner.cache.put(job.cache_key, job.progress())
            _drains += 1
        return settled


def wait() -> int:
    """Run every queued tuning job that holds arguments to the end (benchmarks call it after their
    warm-up, so what they time is tuned); returns how many settled. A job whose key was not called since
    the drain before last holds none and waits for that call.

    >>> from burn import autotune
    >>> autotune.wait()
    0
    """
    return tune_pending(math.inf)


def seconds() -> float:
    """Host seconds this process has spent tuning so far: background units (``tune_pending``) and
    tuning that blocked a call (``BURN_AUTOTUNE_BLOCKING=1``). The Learner reports it in its summary.

    >>> from burn import autotune
    >>> autotune.seconds() >= 0.0
    True
    """
    return _spent[0]


def spend(seconds_: float) -> None:
    """Add ``seconds_`` of tuning to ``seconds()`` (the blocking tuner's share)."""
    _spent[0] += seconds_


_spent = [0.0]


def _drain(budget: float) -> int:
    if not _queue:
        return 0
    start = time.perf_counter()
    try:
        return _drain_units(budget, start)
    finally:
        _spent[0] += time.perf_counter() - start


def _drain_units(budget: float, start: float) -> int:
    settled, ran, i = 0, False, 0
    while i < len(_queue):  # a unit may queue more jobs (a conv candidate's matmul): they come after
        job = _queue[i]
        if job.args is None:
            i += 1
            continue
        if ran and time.perf_counter() - start >= budget:
            break
        ran = True
        try:
            next(job.units)
            continue
        except StopIteration as stop:
            job.tuner._settle(job, stop.value)
        except Exception as exc:  # the reference failed on these inputs: keep the candidate in use
            warnings.warn(
                f"burn.autotune: tuning {job.family.name} for {job.key} on {job.tuner.device} stopped: the "
                f"reference {job.family.reference!r} failed ({type(exc).__name__}: {exc}); the key keeps "
                f"running {job.in_use!r} (not cached: tuned again in the next process)",
                RuntimeWarning,
                stacklevel=3,
            )
            job.tuner._settle(job, None)
        del _queue[i]
        settled += 1
    return settled


def discard() -> int:
    """Drop every queued job without running it (their keys keep their candidate in use); returns how
    many were dropped. Tests use it so one test's queue never runs in another's."""
    with _lock:
        dropped = list(_queue)
        _queue.clear()
    for job in dropped:
        job.tuner._forget(job)
    return len(dropped)
