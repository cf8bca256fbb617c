"""``WebMetric``: one browser figure as a burn_train numeric metric (plotted, logged, shown).

It reads its source's collector through burn_train's ``CollectorMetric``: sampled on the event
processor (inline in the browser) at most every ``interval`` seconds, NaN samples skipped, the epoch
value the mean of the samples. ``Step Time`` is the exception: it is sampled on every step, and the
first step of each epoch only starts the clock (the time before it spans an epoch boundary, a
validation pass, a checkpoint), so every sample is exactly one step on ``performance.now()``.
Needs burn-train; importing it without burn-train raises ImportError.
"""

from __future__ import annotations

import math
from typing import Any

try:
    from burn_train.metric import CollectorMetric
except ImportError as exc:  # pragma: no cover - exercised only where burn-train is absent
    raise ImportError("WebMetric needs burn-train (pip install burn-train)") from exc

from ._sources import KEY_SOURCE, SOURCES

STEP_TIME = "Step Time"


def _alias(key: str) -> str:
    return key.lower().replace(" ", "_")


# "step_time" -> "Step Time", "wasm_heap" -> "Wasm Heap", "webgpu_max_buffer" -> "WebGPU Max Buffer", ...
ALIASES: dict[str, str] = {_alias(key): key for key in KEY_SOURCE}


def _key_of(metric: object) -> str:
    if isinstance(metric, str):
        key = metric if metric in KEY_SOURCE else ALIASES.get(_alias(metric))
        if key is not None:
            return key
    raise ValueError(
        f"WebMetric: metric must be one of {sorted(ALIASES)} (or {list(KEY_SOURCE)}), got {metric!r}"
    )


class WebMetric(CollectorMetric):
    """The browser figure ``metric``: a key of a web source (``"Wasm Heap"``) or its alias (``"wasm_heap"``).

    ``interval``: seconds between samples (``Step Time`` ignores it: one sample per step).

    >>> from burn_train import LearnerBuilder
    >>> builder = LearnerBuilder("artifacts").metric_train_numeric(WebMetric("step_time"))
    """

    higher_is_better = False

    def __init__(self, metric: str = "step_time", interval: float = 1.0) -> None:
        key = _key_of(metric)
        if isinstance(interval, bool) or not isinstance(interval, (int, float)) or not interval >= 0:
            raise ValueError(f"WebMetric: interval must be a number of seconds >= 0, got {interval!r}")
        source = SOURCES[KEY_SOURCE[key]]
        self.metric = key
        self.per_step = key == STEP_TIME
        self._starting = True
        super().__init__(source.name, key, 0.0 if self.per_step else interval, unit=source.keys[key])

    def _reset(self) -> None:
        super()._reset()
        self._starting = True  # a new epoch: its first step restarts the clock

    def _update(self, item: Any, metadata: Any) -> float:
        if self.per_step and self._starting:
            self._starting = False
            self._build().restart()
            return math.nan  # no full step measured yet
        return super()._update(item, metadata)

    def _read(self, values: dict[str, float]) -> float:
        if self.key not in values:  # cannot happen with WebCollector (it reports NaN), but stay soft
            return math.nan
        return super()._read(values)
