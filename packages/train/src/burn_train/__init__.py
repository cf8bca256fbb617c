"""burn_train: Learner, metrics, event processor, live dashboard and checkpoints for burn-py.

>>> from burn_train import LearnerBuilder, TrainOutput, ClassificationOutput
>>> from burn_train.metric import LossMetric, AccuracyMetric

Names load lazily (module ``__getattr__``): importing ``burn_train`` or ``burn_train.processor`` /
``burn_train.renderer`` loads neither numpy nor rich and starts no thread, so the event processor and
the dashboard run under Pyodide.
"""

from importlib import import_module as _import_module
from typing import TYPE_CHECKING

from ._version import __version__

if TYPE_CHECKING:  # what the lazy names below resolve to, for type checkers (re-exported by __all__)
    from . import checkpoint, learner, logger, metric, processor, renderer  # noqa: F401
    from ._events import AutotuneEvent, MetricMetadata, Progress, TrainingProgress  # noqa: F401
    from ._interrupter import TrainingInterrupter  # noqa: F401
    from ._output import ClassificationOutput, MultiLabelClassificationOutput, RegressionOutput, TrainOutput  # noqa: F401
    from .checkpoint import ComposedPolicy, FileCheckpointer, KeepBest, KeepLastN  # noqa: F401
    from .learner import EarlyStopping, Learner, LearnerBuilder, LearnerSummary  # noqa: F401

# public name -> private module that defines it
_LAZY = {
    "LearnerBuilder": "learner",
    "Learner": "learner",
    "LearnerSummary": "learner",
    "EarlyStopping": "learner",
    "TrainOutput": "_output",
    "ClassificationOutput": "_output",
    "MultiLabelClassificationOutput": "_output",
    "RegressionOutput": "_output",
    "TrainingInterrupter": "_interrupter",
    "FileCheckpointer": "checkpoint",
    "KeepLastN": "checkpoint",
    "KeepBest": "checkpoint",
    "ComposedPolicy": "checkpoint",
    "AutotuneEvent": "_events",
    "MetricMetadata": "_events",
    "TrainingProgress": "_events",
    "Progress": "_events",
}
_SUBMODULES = ("checkpoint", "learner", "logger", "metric", "processor", "renderer")


def __getattr__(name: str) -> object:
    if name in _SUBMODULES:
        module = _import_module(f"{__name__}.{name}")
    elif name in _LAZY:
        module = getattr(_import_module(f"{__name__}.{_LAZY[name]}"), name)
    else:
        raise AttributeError(f"module 'burn_train' has no attribute {name!r}")
    globals()[name] = module
    return module


def __dir__() -> list[str]:
    return sorted(__all__)


__all__ = ["__version__", *sorted(_LAZY), *_SUBMODULES]
