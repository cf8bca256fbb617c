"""One key's tuning as a job of small units: the reference run once, each candidate checked against it,
then every checked candidate timed (twice over; one that a single run shows to be several times slower
than the best so far, and slow in itself, is timed no further), the winner stored in the device's
``TuneCache``.

``TuneJob.units`` is a generator that yields after each unit (one candidate's check or one timing), so
the same work runs all at once when tuning blocks (``Autotuner._tune`` exhausts it) and a unit at a time
between training steps otherwise (``burn.autotune.tune_pending``). Its value is the winner's name.

A background job holds the arguments of a call of its key (``args``) until a drain runs it; a drain
releases the arguments of jobs not called since the drain before, and the next call of the key arms the
job again with its own (``arm``). The reference's output is recomputed for new arguments and at the start
of each drain (the held buffers may have been written since): every check compares a candidate with the
reference on the same inputs.
"""

from __future__ import annotations

import functools
import time
import warnings
from collections.abc import Generator
from typing import TYPE_CHECKING, Any

from ._events import AutotuneEvent, publish

if TYPE_CHECKING:
    from ._tuner import Autotuner, Candidate, Family

_TIMING_PASSES = 2  # timings of each checked candidate (its fastest kept): see ``TuneJob.units``
# a candidate whose one run takes longer than this many times the best timing so far, and longer than
# _PRUNE_FLOOR_S, cannot win: that run is its figure, and it is timed no further
_PRUNE_RATIO = 3.0
_PRUNE_FLOOR_S = 0.05
_UNSET: Any = object()


class TuneJob:
    """The tuning of ``family`` for ``key`` on ``tuner``'s device, in units (``units``).

    ``in_use``: the candidate the key runs until the job settles; ``background``: whether it runs between
    steps (its events say so, with the number of jobs pending)."""

    def __init__(
        self,
        tuner: Autotuner,
        family: Family,
        key: str,
        cache_key: str,
        mode: str,
        args: tuple[Any, ...],
        in_use: str,
        background: bool,
        resume: dict[str, Any] | None = None,
    ) -> None:
        self.tuner, self.family, self.key, self.cache_key, self.mode = tuner, family, key, cache_key, mode
        self.in_use = in_use
        self.background = background
        self.args: tuple[Any, ...] | None = args
        self.armed = 0  # the drain count when ``args`` were taken (``_background``)
        self._reference: Any = _UNSET
        runnable = [c for c in family.candidates if c.applies is None or c.applies(*args)]
        if mode == "fast":
            runnable = [c for c in runnable if c.fast or c.name == family.reference]
        self.runnable: list[Candidate] = runnable
        # what an earlier process did (``progress``): checks passed, candidates dropped, timings made
        done = resume if resume is not None and resume.get("mode") == mode else {}
        self.checked: set[str] = set(done.get("checked", ()))
        self.dropped: dict[str, str] = dict(done.get("dropped", {}))
        self.times: dict[str, float] = dict(done.get("seconds", {}))
        self.timed: dict[str, int] = dict(done.get("timed", {}))
        self.progressed = False  # a unit ran since the last ``progress``
        self.units: Generator[None, None, str] = self._units()

    def arm(self, args: tuple[Any, ...], drains: int) -> None:
        """Take the arguments of a new call of the key (the reference is run again on them)."""
        self.args, self.armed, self._reference = args, drains, _UNSET

    def invalidate(self) -> None:
        """The arguments' contents may change before the next drain (a replayed program or a captured
        graph writes into buffers it lent, fusion writes into dead inputs): the reference is run
        again on them before the next check."""
        self._reference = _UNSET

    def release(self) -> None:
        """Drop the arguments (and the reference's output on them) until the key is called again."""
        self.args, self._reference = None, _UNSET

    def _event(self, **fields: Any) -> AutotuneEvent:
        from ._background import pending

        # a settled job is still queued when it says so: the others are what is left
        left = max(0, pending() - (1 if fields.get("done") else 0))
        return AutotuneEvent(
            self.family.name,
            key=self.key,
            device=self.tuner.device,
            background=self.background,
            pending=left if self.background else 0,
            **fields,
        )

    def _reference_output(self) -> Any:
        if self._reference is _UNSET:  # a failing reference is a real error: raise
            ref = self.family.by_name[self.family.reference]
            self._reference = self.tuner._read(ref.fn(*self._args()))
        return self._reference

    def _args(self) -> tuple[Any, ...]:
        if self.args is None:
            raise RuntimeError(f"autotune job {self.family.name} [{self.key}]: run without arguments")
        return self.args

    def progress(self) -> dict[str, Any]:
        """The job's progress as a cache entry without a winner, so a process that ends before the job
        does leaves it for the next one to go on with (``Autotuner._choose``)."""
        self.progressed = False
        return {
            "partial": True,
            "checked": sorted(self.checked),
            "dropped": self.dropped,
            "seconds": {k: round(v, 9) for k, v in self.times.items()},
            "timed": self.timed,
            "mode": self.mode,
        }

    def _slower_than_best(self, cand: Candidate) -> bool:
        """Whether one run of ``cand`` (its output read back, so the device finished it) already takes
        longer than ``_PRUNE_RATIO`` times the best timing so far and longer than ``_PRUNE_FLOOR_S``:
        such a candidate cannot win, and its full timing (a warm-up and several runs) would cost many
        times the tuning budget of a step (a slow convolution candidate on a software adapter took
        seconds per timing). Its figure is then that run."""
        best = min(
            (t for n, t in self.times.items() if n != cand.name and n not in self.dropped), default=None
        )
        if best is None:
            return False
        start = time.perf_counter()
        self.tuner._read(cand.fn(*self._args()))
        took = time.perf_counter() - start
        if took > max(_PRUNE_RATIO * best, _PRUNE_FLOOR_S):
            self.times[cand.name] = took
            return True
        return False

    def _units(self) -> Generator[None, None, str]:
        family, total = self.family, len(self.runnable)
        ref_candidate = family.by_name[family.reference]
        checked = []
        first = True
        for step, cand in enumerate(self.runnable, 1):  # first run (the compile) and check of each
            if cand.name in self.dropped:
                continue
            if cand.name in self.checked:  # checked by an earlier process
                checked.append(cand)
                continue
            if first:
                self._reference_output()
                first = False
            else:
                yield  # a unit ends before each next one: the last one settles the job
            self.progressed = True
            publish(self._event(step=step, total=total))
            try:
                if cand is not ref_candidate:
                    reference = self._reference_output()
                    if not family.matches(self.tuner._read(cand.fn(*self._args())), reference):
                        self.dropped[cand.name] = "wrong output (differs from the reference)"
                        continue
                checked.append(cand)
                self.checked.add(cand.name)
            except Exception as exc:  # a candidate that cannot run here is dropped, never fatal
                self.dropped[cand.name] = f"{type(exc).__name__}: {exc}"
        # then the timings, back to back, twice over, each candidate keeping its faster figure: a GPU
        # slows its clocks in the host's pauses (compiles, reads), and a candidate timed right after
        # one runs at idle clocks (the wgpu sweep timed that way on the H200 read 40-60% of the warm
        # figures at 1024-2048); the first pass brings the clocks back
        for timing in range(_TIMING_PASSES):
            for cand in checked:
                if cand.name in self.dropped or self.timed.get(cand.name, 0) > timing:
                    continue
                if first:
                    first = False
                else:
                    yield
                self.progressed = True
                try:
                    if timing == 0 and self._slower_than_best(cand):
                        self.timed[cand.name] = _TIMING_PASSES  # its one run is its figure: no more
                        continue
                    took = self.tuner.timer(functools.partial(cand.fn, *self._args()))
                except Exception as exc:
                    self.dropped[cand.name] = f"{type(exc).__name__}: {exc}"
                    self.times.pop(cand.name, None)
                    continue
                self.times[cand.name] = min(took, self.times.get(cand.name, took))
                self.timed[cand.name] = timing + 1
        return self._finish(total)

    def _finish(self, total: int) -> str:
        """Report the dropped candidates, store the winner in the cache, publish the last event."""
        family, times = self.family, self.times
        for name, why in self.dropped.items():
            warnings.warn(
                f"burn.autotune: {family.name} candidate {name!r} dropped for {self.key} on "
                f"{self.tuner.device}: {why}",
                RuntimeWarning,
                stacklevel=2,
            )
        best = min(times, key=times.__getitem__) if times else family.reference
        self.tuner.cache.put(
            self.cache_key,
            {
                "best": best,
                "seconds": {k: round(v, 9) for k, v in sorted(times.items(), key=lambda kv: kv[1])},
                "dropped": self.dropped,
                "mode": self.mode,
                "tuned_at": time.strftime("%Y-%m-%dT%H:%M:%S"),
            },
        )
        self.args, self._reference = None, _UNSET  # nothing held once settled
        publish(self._event(step=total, total=total, done=True, best=best))
        return best
