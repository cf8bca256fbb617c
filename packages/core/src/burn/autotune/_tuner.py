"""Tunable kernel families and the per-device tuner that picks, checks, times and remembers.

A ``Family`` declares its candidates, a key function (op, shapes bucketed, dtype, layout) and a
reference candidate. The first time a key is seen on a device, ``Autotuner.run`` checks every
candidate's output against the reference once (a wrong or failing candidate is dropped and reported,
never used), times the rest (warm-up, then the median of several runs, with the device's timer: GPU
timestamps where it has them), keeps the fastest, and stores the choice in the device's ``TuneCache``
so later processes skip the tuning. Every step is an ``AutotuneEvent`` for the dashboard.

``BURN_AUTOTUNE``: ``full`` (default: every candidate), ``fast`` (the reduced set marked ``fast``),
``cache-only`` (cached choices, else the default, never benchmarking), ``off`` (the default candidate,
no cache).
"""

from __future__ import annotations

import functools
import os
import statistics
import threading
import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ._cache import TuneCache
from ._events import AutotuneEvent, publish

MODES = ("full", "fast", "cache-only", "off")


def mode() -> str:
    """The autotune mode from ``BURN_AUTOTUNE`` (default ``full``)."""
    value = os.environ.get("BURN_AUTOTUNE", "").strip().lower() or "full"
    if value not in MODES:
        raise ValueError(f"BURN_AUTOTUNE: expected one of {', '.join(MODES)}, got {value!r}")
    return value


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
    ``close(out, ref)`` compares host arrays (default: allclose with ``rtol``/``atol``)."""

    name: str
    candidates: tuple[Candidate, ...]
    key: Callable[..., str]
    reference: str
    default: str = ""
    rtol: float = 1e-4
    atol: float = 1e-4
    close: Callable[[Any, Any], bool] | None = None
    by_name: dict[str, Candidate] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        names = [c.name for c in self.candidates]
        if len(set(names)) != len(names):
            raise ValueError(f"autotune family {self.name!r}: duplicate candidate names {names}")
        object.__setattr__(self, "by_name", {c.name: c for c in self.candidates})
        for role, name in (("reference", self.reference), ("default", self.default or self.reference)):
            if name not in self.by_name:
                raise ValueError(f"autotune family {self.name!r}: {role} {name!r} is not a candidate")

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


_TIMING_PASSES = 2  # timings of each checked candidate (its fastest kept): see ``Autotuner._tune``


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
        """The candidate ``family`` uses for ``args`` (tuning it first when needed)."""
        key = family.key(*args)
        name = self._chosen.get((family.name, key))
        if name is None:
            with self._lock:  # one tuning run per key, whichever thread asks first
                name = self._chosen.get((family.name, key))
                if name is None:
                    name = self._choose(family, key, args)
                    self._chosen[(family.name, key)] = name
        return name

    def run(self, family: Family, *args: Any) -> Any:
        """Run ``family`` on ``args`` with its tuned candidate."""
        return family.by_name[self.choice(family, *args)].fn(*args)

    # ------------------------------------------------------------------ choosing
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
        return self._tune(family, key, cache_key, args, current)

    def _tune(self, family: Family, key: str, cache_key: str, args: tuple, current: str) -> str:
        runnable = [c for c in family.candidates if c.applies is None or c.applies(*args)]
        if current == "fast":
            runnable = [c for c in runnable if c.fast or c.name == family.reference]
        total = len(runnable)
        ref_candidate = family.by_name[family.reference]
        reference = self._read(ref_candidate.fn(*args))  # a failing reference is a real error: raise
        times: dict[str, float] = {}
        dropped: dict[str, str] = {}
        checked = []
        for step, cand in enumerate(runnable, 1):  # first run (the compile) and check of each
            publish(AutotuneEvent(family.name, step=step, total=total, key=key, device=self.device))
            try:
                if cand is not ref_candidate and not family.matches(self._read(cand.fn(*args)), reference):
                    dropped[cand.name] = "wrong output (differs from the reference)"
                    continue
                checked.append(cand)
            except Exception as exc:  # a candidate that cannot run here is dropped, never fatal
                dropped[cand.name] = f"{type(exc).__name__}: {exc}"
        # then the timings, back to back, twice over, each candidate keeping its faster figure: a GPU
        # slows its clocks in the host's pauses (compiles, reads), and a candidate timed right after
        # one runs at idle clocks (the wgpu sweep timed that way on the H200 read 40-60% of the warm
        # figures at 1024-2048); the first pass brings the clocks back
        for _ in range(_TIMING_PASSES):
            for cand in checked:
                if cand.name in dropped:
                    continue
                try:
                    took = self.timer(functools.partial(cand.fn, *args))
                except Exception as exc:
                    dropped[cand.name] = f"{type(exc).__name__}: {exc}"
                    times.pop(cand.name, None)
                    continue
                times[cand.name] = min(took, times.get(cand.name, took))
        for name, why in dropped.items():
            warnings.warn(
                f"burn.autotune: {family.name} candidate {name!r} dropped for {key} on {self.device}: {why}",
                RuntimeWarning,
                stacklevel=4,
            )
        best = min(times, key=times.__getitem__) if times else family.reference
        self.cache.put(
            cache_key,
            {
                "best": best,
                "seconds": {k: round(v, 9) for k, v in sorted(times.items(), key=lambda kv: kv[1])},
                "dropped": dropped,
                "mode": current,
                "tuned_at": time.strftime("%Y-%m-%dT%H:%M:%S"),
            },
        )
        publish(
            AutotuneEvent(
                family.name, step=total, total=total, done=True, key=key, device=self.device, best=best
            )
        )
        return best


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
