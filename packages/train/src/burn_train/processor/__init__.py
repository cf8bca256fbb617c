"""burn_train.processor: events -> metrics -> renderers and loggers, never blocking training.

numpy-free and thread-optional: ``make_processor(hub)`` picks a worker thread where threads exist and
inline processing where they don't (Pyodide).
"""

from .._store import EventStore
from ._hub import MetricsHub, MetricSlot
from ._processors import EventProcessor, InlineProcessor, ThreadedProcessor, make_processor

__all__ = [
    "EventProcessor",
    "EventStore",
    "InlineProcessor",
    "MetricSlot",
    "MetricsHub",
    "ThreadedProcessor",
    "make_processor",
]
