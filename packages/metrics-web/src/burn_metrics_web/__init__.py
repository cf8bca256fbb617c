"""burn_metrics_web: browser metrics and a browser dashboard for burn-py under Pyodide.

Collectors read JavaScript through Pyodide's ``js`` module: step timing on ``performance.now()``
(``web-timing``), the JS heap (``web-js-heap``: ``performance.memory``, Chromium only), the wasm heap
(``web-wasm-heap``), ``navigator.hardwareConcurrency`` (``web-cpu-cores``) and the WebGPU adapter
(``web-gpu``: ``navigator.gpu``). They register through burn's plugin hook (group ``metrics-wasm``);
each source fails soft, and outside Pyodide each is listed as unavailable with the reason. The
``web`` renderer draws burn_train's dashboard into the page, or as console lines where no page exists.

>>> from burn_train import LearnerBuilder
>>> from burn_metrics_web import WebMetric             # WebMetric and WebRenderer need burn-train
>>> WebMetric("step_time").name
'Step Time'
>>> builder = LearnerBuilder("artifacts").metric_train_numeric(WebMetric("step_time")).renderer("web")
"""

from typing import TYPE_CHECKING

from burn.plugins import lazy_attributes

from ._collector import WebCollector, source_available
from ._platform import Env, SourceUnavailable, platform_reason
from ._sources import KEY_SOURCE, SOURCES, Source
from ._version import __version__

if TYPE_CHECKING:
    from ._metric import WebMetric
    from ._renderer import WebRenderer

_LAZY = {"WebMetric": "._metric", "WebRenderer": "._renderer"}  # these import burn_train


__getattr__ = lazy_attributes(__name__, _LAZY, globals())


__all__ = [
    "KEY_SOURCE",
    "SOURCES",
    "Env",
    "Source",
    "SourceUnavailable",
    "WebCollector",
    "WebMetric",
    "WebRenderer",
    "__version__",
    "platform_reason",
    "source_available",
]
