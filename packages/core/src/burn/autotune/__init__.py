"""burn.autotune: kernel autotuning, its persistent cache, and the event bus the dashboard reads.

- ``Family`` / ``Candidate``: a tunable kernel family (candidates, a key function, a reference).
- ``Autotuner``: one device's tuner; ``run(family, *args)`` uses the tuned candidate, tuning on first
  use of a key (checked against the reference, timed, cached under ``BURN_CACHE_DIR``).
- ``mode()`` reads ``BURN_AUTOTUNE`` (``full`` | ``fast`` | ``cache-only`` | ``off``); ``bucket(n)`` rounds a
  large dim to a power of two for keys; ``cache_dir()``, ``autotune_dir()``, ``list_caches()``,
  ``clear_caches()`` (also ``burn autotune show|clear``).
- ``subscribe(callback)`` / ``publish(event)`` carry ``AutotuneEvent``s (kinds autotune, compile, cache).

Importing this package loads neither numpy nor threads beyond the standard library.
"""

from ._cache import TuneCache, autotune_dir, cache_dir, clear_caches, list_caches
from ._events import AutotuneEvent, publish, subscribe, subscribers, unsubscribe
from ._tuner import MODES, Autotuner, Candidate, Family, bucket, fingerprint, median_timer, mode, tuner_for

__all__ = [
    "MODES",
    "AutotuneEvent",
    "Autotuner",
    "Candidate",
    "Family",
    "TuneCache",
    "autotune_dir",
    "bucket",
    "cache_dir",
    "clear_caches",
    "fingerprint",
    "list_caches",
    "median_timer",
    "mode",
    "publish",
    "subscribe",
    "subscribers",
    "tuner_for",
    "unsubscribe",
]
