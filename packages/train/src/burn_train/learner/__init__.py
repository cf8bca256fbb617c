"""burn_train.learner: LearnerBuilder, Learner, early stopping and the end-of-training summary."""

from ._builder import LearnerBuilder, LearnerConfig
from ._early_stopping import EarlyStopping
from ._learner import Learner
from ._summary import LearnerSummary, MetricSummary

__all__ = ["EarlyStopping", "Learner", "LearnerBuilder", "LearnerConfig", "LearnerSummary", "MetricSummary"]
