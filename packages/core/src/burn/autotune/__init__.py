"""burn.autotune: kernel autotuning, its persistent cache, and the event bus the dashboard reads.

- ``Family`` / ``Candidate``: a tunable kernel family (candidates, a key function, a reference).
- ``Autotuner``: one device's tuner; ``run(family, *args)`` uses the tuned candidate. A key's first call
  runs the family's picked candidate at once and queues its tuning (checked against the reference,
  timed, cached under ``BURN_CACHE_DIR``); ``tune_pending(budget_s)`` runs queued tuning where a step
  ends (``BURN_AUTOTUNE_BUDGET_MS`` per call), ``wait()`` all of it; ``pending()`` counts the jobs,
  ``generation()`` the switches to a winner (fused programs planned before one are planned again),
  ``seconds()`` the host seconds spent tuning, ``compile_seconds()`` those spent waiting for kernel compiles.
  ``BURN_AUTOTUNE_BLOCKING=1`` (``blocking()``) tunes before the first call returns instead.
- ``mode()`` reads ``BURN_AUTOTUNE`` (``full`` | ``fast`` | ``cache-only`` | ``off``); ``bucket(n)`` rounds a
  large dim to a power of two for keys; ``cache_dir()``, ``autotune_dir()``, ``list_caches()``,
  ``clear_caches()`` (also ``burn autotune show|clear``).
- ``subscribe(callback)`` / ``publish(event)`` carry ``AutotuneEvent``s (kinds autotune, compile, cache).

Importing this package loads neither numpy nor threads beyond the standard library.
"""

from ._background import generation, pending, seconds, tune_pending, wait
from ._cache import TuneCache, autotune_dir, cache_dir, clear_caches, list_caches
from ._events import AutotuneEvent, compile_seconds, publish, subscribe, subscribers, unsubscribe
from ._tuner import (
    MODES,
    Autotuner,
    Candidate,
    Family,
    blocking,
    bucket,
    fingerprint,
    median_timer,
    mode,
    tuner_for,
)

__all__ = [
    "MODES",
    "AutotuneEvent",
    "Autotuner",
    "Candidate",
    "Family",
    "TuneCache",
    "autotune_dir",
    "blocking",
    "bucket",
    "cache_dir",
    "clear_caches",
    "compile_seconds",
    "fingerprint",
    "generation",
    "list_caches",
    "median_timer",
    "mode",
    "pending",
    "publish",
    "seconds",
    "subscribe",
    "subscribers",
    "tune_pending",
    "tuner_for",
    "unsubscribe",
    "wait",
]
