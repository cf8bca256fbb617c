"""Tunable kernel families and the per-device tuner that picks, checks, times and remembers.

A ``Family`` declares its candidates, a key function (op, shapes bucketed, dtype, layout), a reference
candidate and a cheap rule (``pick``) for keys not tuned yet. A tuning run (``_job.TuneJob``) checks
every candidate's output against the reference once (a wrong or failing candidate is dropped and
reported, never used), times the rest (warm-up, then the median of several runs, with the device's
timer: GPU timestamps where it has them), keeps the fastest, and stores the choice in the device's
``TuneCache`` so later processes skip the tuning. Every step is an ``AutotuneEvent`` for the dashboard.

The first time a key is seen on a device, ``Autotuner.run`` runs the picked candidate at once and
queues the tuning run, which ``burn.autotune.tune_pending`` works through between steps
(``_background``); the key switches to the winner when it is known. ``BURN_AUTOTUNE_BLOCKING=1`` tunes
before the call returns instead.

``BURN_AUTOTUNE``: ``full`` (default: every candidate), ``fast`` (the reduced set marked ``fast``),
``cache-only`` (cached choices, else the default, never benchmarking), ``off`` (the default candidate,
no cache).
"""

from __future__ import annotations

import os
import statistics
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from . import _background
from ._cache import TuneCache
from ._events import AutotuneEvent, publish
from ._job import TuneJob

MODES = ("full", "fast", "cache-only", "off")


def mode() -> str:
    """The autotune mode from ``BURN_AUTOTUNE`` (default ``full``)."""
    value = os.environ.get("BURN_AUTOTUNE", "").strip().lower() or "full"
    if value not in MODES:
        raise ValueError(f"BURN_AUTOTUNE: expected one of {', '.join(MODES)}, got {value!r}")
    return value


def blocking() -> bool:
    """Whether tuning blocks the call that meets a new key (``BURN_AUTOTUNE_BLOCKING=1``: the winner is
    known before the op returns, as benchmarks want), instead of running in the background.

    >>> import os
    >>> from burn import autotune
    >>> autotune.blocking() == (os.environ.get("BURN_AUTOTUNE_BLOCKING", "") not in ("", "0"))
    True
    """
    value = os.environ.get("BURN_AUTOTUNE_BLOCKING", "").strip().lower()
    return value not in ("", "0", "false", "no", "off")


def bucket(n: int, exact_below: int = 64) -> int:
    """A shape bucket: ``n`` itself when small, else the next power of two (so nearby large shapes
    share one tuning run)."""
    if n <= exact_below:
        return n
    return 1 << (n - 1).bit_length()


@dataclass(frozen=True)
class Candidate:
    """One implementation: ``fn(*args)``; ``fast``: in the reduced set; ``applies(*args)``: whether it
    can run these arguments on this device (None: always)."""

    name: str
    fn: Callable[..., Any]
    fast: bool = True
    applies: Callable[..., bool] | None = None


@dataclass(frozen=True)
class Family:
    """A tunable kernel family. ``key(*args)`` names the tuning case; ``reference`` is the trusted
    candidate outputs are checked against, ``default`` the one used untuned (default: the reference);
    ``close(out, ref)`` compares host arrays (default: allclose with ``rtol``/``atol``); ``pick(*args)``
    names the candidate a key runs while it tunes in the background: a cheap rule on shapes (default:
    ``default``; a name that is not a candidate applying to ``args`` falls back to it)."""

    name: str
    candidates: tuple[Candidate, ...]
    key: Callable[..., str]
    reference: str
    default: str = ""
    rtol: float = 1e-4
    atol: float = 1e-4
    close: Callable[[Any, Any], bool] | None = None
    pick: Callable[..., str] | None = None
    by_name: dict[str, Candidate] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        names = [c.name for c in self.candidates]
        if len(set(names)) != len(names):
            raise ValueError(f"autotune family {self.name!r}: duplicate candidate names {names}")
        object.__setattr__(self, "by_name", {c.name: c for c in self.candidates})
        for role, name in (("reference", self.reference), ("default", self.default or self.reference)):
            if name not in self.by_name:
                raise ValueError(f"autotune family {self.name!r}: {role} {name!r} is not a candidate")

    def picked(self, *args: Any) -> str:
        """The candidate ``pick`` names for ``args``, where it is one that applies; else the default."""
        default = self.default or self.reference
        if self.pick is None:
            return default
        cand = self.by_name.get(self.pick(*args))
        if cand is None or (cand.applies is not None and not cand.applies(*args)):
            return default
        return cand.name

    def matches(self, out: Any, ref: Any) -> bool:
        if self.close is not None:
            return bool(self.close(out, ref))
        import numpy as np

        out, ref = np.asarray(out), np.asarray(ref)
        return out.shape == ref.shape and bool(
            np.allclose(
                out.astype(np.float64), ref.astype(np.float64), rtol=self.rtol, atol=self.atol, equal_nan=True
            )
        )


def median_timer(
    sync: Callable[[], None], warmup: int = 1, reps: int = 5
) -> Callable[[Callable[[], Any]], float]:
    """A timer from a device sync: warm-up runs, then the median wall time of ``reps`` synced runs."""

    def timer(fn: Callable[[], Any]) -> float:
        for _ in range(warmup):
            fn()
        sync()
        times = []
        for _ in range(reps):
            start = time.perf_counter()
            fn()
            sync()
            times.append(time.perf_counter() - start)
        return statistics.median(times)

    return timer


class Autotuner:
    """The tuner of one device.

    ``fingerprint`` identifies the device and software (adapter or GPU name, driver, backend, package
    versions): the cache is per fingerprint. ``timer(fn) -> seconds`` times a call; ``read(out)`` brings
    an output to the host for the correctness check (a candidate returning a tuple of outputs, such as
    a max pool's values and indices, has each one read).
    """

    def __init__(
        self,
        fingerprint: str,
        device: str,
        timer: Callable[[Callable[[], Any]], float],
        read: Callable[[Any], Any],
        persistent: bool = True,
    ) -> None:
        self.fingerprint = fingerprint
        self.device = device
        self.timer = timer
        self.read = read
        self._persistent = persistent
        self._cache: TuneCache | None = None
        self._chosen: dict[tuple[str, str], str] = {}
        self._jobs: dict[tuple[str, str], TuneJob] = {}  # keys tuning in the background
        self._lock = threading.RLock()

    @property
    def cache(self) -> TuneCache:
        if self._cache is None:
            self._cache = TuneCache(self.fingerprint, self._persistent)
        return self._cache

    def _read(self, out: Any) -> Any:
        """``read`` of one output, or of each output of a tuple."""
        return tuple(self.read(o) for o in out) if isinstance(out, tuple) else self.read(out)

    def choice(self, family: Family, *args: Any) -> str:
        """The candidate ``family`` uses for ``args``: the tuned one; for a key not tuned yet, the
        picked one while it tunes in the background, or (``BURN_AUTOTUNE_BLOCKING=1``) the winner of a
        tuning run made now."""
        key = family.key(*args)
        name = self._chosen.get((family.name, key))
        if _background.standing_in():  # stand-in values: neither tune on them nor choose by them
            return name if name is not None else self._quiet_choice(family, key, args)
        if name is None:
            with self._lock:  # one tuning run per key, whichever thread asks first
                name = self._chosen.get((family.name, key))
                if name is None:
                    name = self._choose(family, key, args)
                    self._chosen[(family.name, key)] = name
        elif self._jobs:
            job = self._jobs.get((family.name, key))
            if job is not None:  # tuning in the background: the job runs on this step's inputs
                _background.arm(job, args)
        return name

    def run(self, family: Family, *args: Any) -> Any:
        """Run ``family`` on ``args`` with its tuned candidate."""
        return family.by_name[self.choice(family, *args)].fn(*args)

    # ------------------------------------------------------------------ choosing
    def _quiet_choice(self, family: Family, key: str, args: tuple) -> str:
        """What ``_choose`` would run first for ``key``, with no tuning started and nothing recorded:
        the cached winner, else the picked candidate (the default where tuning is off)."""
        default = family.default or family.reference
        if mode() == "off":
            return default
        entry = self.cache.get(f"{family.name}|{key}")
        if entry is not None and entry.get("best") in family.by_name:
            return str(entry["best"])
        return default if mode() == "cache-only" else family.picked(*args)

    def _choose(self, family: Family, key: str, args: tuple) -> str:
        current = mode()
        default = family.default or family.reference
        if current == "off":
            return default
        cache_key = f"{family.name}|{key}"
        entry = self.cache.get(cache_key)
        if entry is not None and entry.get("best") in family.by_name:
            publish(
                AutotuneEvent(
                    family.name, kind="cache", done=True, key=key, device=self.device, best=entry["best"]
                )
            )
            return str(entry["best"])
        if current == "cache-only":
            return default
        if blocking():
            return self._tune(family, key, cache_key, args, current)
        picked = family.picked(*args)
        # an entry without a winner: an earlier process's progress on this key, which the job goes on with
        resume = entry if entry is not None and entry.get("partial") else None
        job = TuneJob(self, family, key, cache_key, current, args, picked, background=True, resume=resume)
        self._jobs[(family.name, key)] = job
        _background.enqueue(job)
        publish(job._event(total=len(job.runnable)))
        return picked

    def _tune(self, family: Family, key: str, cache_key: str, args: tuple, current: str) -> str:
        """Tune ``key`` now: every unit of its job, before the call returns."""
        job = TuneJob(self, family, key, cache_key, current, args, "", background=False)
        start = time.perf_counter()
        try:
            while True:
                try:
                    next(job.units)
                except StopIteration as stop:
                    return str(stop.value)
        finally:
            _background.spend(time.perf_counter() - start)

    def _settle(self, job: TuneJob, best: str | None) -> None:
        """A background job ended: its winner (None: none, keep the candidate in use) serves the key
        from the next call on."""
        with self._lock:
            slot = (job.family.name, job.key)
            self._jobs.pop(slot, None)
            if best is not None and best != self._chosen.get(slot, job.in_use):
                self._chosen[slot] = best
                _background.switched()

    def _forget(self, job: TuneJob) -> None:
        """A background job dropped unrun: its key is chosen again at its next call."""
        with self._lock:
            slot = (job.family.name, job.key)
            self._jobs.pop(slot, None)
            self._chosen.pop(slot, None)


def fingerprint(*parts: str) -> str:
    """A fingerprint string from its parts (device name, driver, backend, versions): ``a|b|c``."""
    from .. import __version__

    return "|".join([*(p.replace("|", "/") for p in parts), f"burn-core {__version__}"])


def tuner_for(backend: Any, parts: Sequence[str], timer: Callable[[Callable[[], Any]], float]) -> Autotuner:
    """The backend's tuner (made once and kept on the backend as ``_autotuner``)."""
    tuner = getattr(backend, "_autotuner", None)
    if tuner is None:
        tuner = Autotuner(fingerprint(*parts), str(backend.device), timer, backend.to_numpy)
        backend._autotuner = tuner
    return tuner
