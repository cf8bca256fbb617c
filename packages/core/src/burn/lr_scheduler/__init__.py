"""burn.lr_scheduler: learning-rate schedules. A float is the constant schedule.

>>> sched = burn.lr_scheduler.StepLrSchedulerConfig(0.1, step_size=2).init()
>>> [round(sched.step(), 4) for _ in range(4)]
[0.1, 0.1, 0.01, 0.01]
"""

from ._schedulers import (
    ConstantLr,
    CosineAnnealingLrScheduler,
    CosineAnnealingLrSchedulerConfig,
    ExponentialLrScheduler,
    ExponentialLrSchedulerConfig,
    LinearLrScheduler,
    LinearLrSchedulerConfig,
    LrScheduler,
    NoamLrScheduler,
    NoamLrSchedulerConfig,
    StepLrScheduler,
    StepLrSchedulerConfig,
)

__all__ = [
    "ConstantLr",
    "CosineAnnealingLrScheduler",
    "CosineAnnealingLrSchedulerConfig",
    "ExponentialLrScheduler",
    "ExponentialLrSchedulerConfig",
    "LinearLrScheduler",
    "LinearLrSchedulerConfig",
    "LrScheduler",
    "NoamLrScheduler",
    "NoamLrSchedulerConfig",
    "StepLrScheduler",
    "StepLrSchedulerConfig",
]
