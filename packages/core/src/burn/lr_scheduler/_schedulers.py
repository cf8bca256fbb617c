"""Learning-rate schedulers (Burn's ``LrScheduler``): ``<Name>LrSchedulerConfig(...).init()`` checks
the values (``burn.ConfigError``) and returns a scheduler whose ``step()`` gives the next learning rate.
A plain float is the constant schedule (``ConstantLr`` wraps one). Each scheduler's ``record()`` is a
dict of plain numbers, restored by ``load_record``.
"""

from __future__ import annotations

import math
import warnings
from typing import Any

from .._errors import RecordError
from ..config import Config, check


def _positive_lr(owner: str, name: str, value: float) -> None:
    ok = (
        isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) and value > 0
    )
    check(ok, owner, f"{name} must be a finite number > 0, got {value!r}")


class LrScheduler:
    """Base class: ``step() -> float``; ``record()`` / ``load_record()`` save the position.

    >>> config = burn.lr_scheduler.ExponentialLrSchedulerConfig(1.0, gamma=0.5)
    >>> sched = config.init()
    >>> sched.step(), sched.step()
    (1.0, 0.5)
    >>> sched.record()
    {'scheduler': 'ExponentialLrScheduler', 'iteration': 2}
    >>> config.init().load_record(sched.record()).step()   # resumes where it stopped
    0.25
    """

    _state: tuple[str, ...] = ()

    def step(self) -> float:
        raise NotImplementedError

    def record(self) -> dict[str, Any]:
        return {"scheduler": type(self).__name__, **{k: getattr(self, k) for k in self._state}}

    def load_record(self, record: dict[str, Any]) -> LrScheduler:
        if not isinstance(record, dict) or record.get("scheduler") != type(self).__name__:
            got = record.get("scheduler") if isinstance(record, dict) else type(record).__name__
            raise RecordError(f"{type(self).__name__}.load_record: record is for {got!r}")
        missing = [k for k in self._state if k not in record]
        if missing:
            raise RecordError(f"{type(self).__name__}.load_record: missing {missing}")
        for k in self._state:
            setattr(self, k, record[k])
        return self

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.record()})"


class ConstantLr(LrScheduler):
    """The same learning rate at every step (a plain float passed as a schedule becomes one).

    >>> sched = burn.lr_scheduler.ConstantLr(0.01)
    >>> sched.step(), sched.step()
    (0.01, 0.01)
    """

    def __init__(self, lr: float) -> None:
        _positive_lr("ConstantLr", "lr", lr)
        self.lr = float(lr)

    def step(self) -> float:
        return self.lr


class LinearLrSchedulerConfig(Config):
    """From ``initial_lr`` to ``final_lr`` in ``num_iters`` equal steps, then ``final_lr``. As in Burn the
    first ``step()`` returns initial_lr itself: (0.9, 0.5, 4) gives 0.9, 0.8, 0.7, 0.6, 0.5, 0.5, ...

    >>> sched = burn.lr_scheduler.LinearLrSchedulerConfig(initial_lr=0.9, final_lr=0.5, num_iters=4).init()
    >>> [round(sched.step(), 4) for _ in range(6)]
    [0.9, 0.8, 0.7, 0.6, 0.5, 0.5]
    """

    initial_lr: float
    final_lr: float
    num_iters: int

    def init(self) -> LinearLrScheduler:
        _positive_lr("LinearLrSchedulerConfig", "initial_lr", self.initial_lr)
        check(self.final_lr >= 0, "LinearLrSchedulerConfig", f"final_lr must be >= 0, got {self.final_lr}")
        check(self.num_iters > 0, "LinearLrSchedulerConfig", f"num_iters must be > 0, got {self.num_iters}")
        return LinearLrScheduler(self)


class LinearLrScheduler(LrScheduler):
    """Built by ``LinearLrSchedulerConfig.init()``; its record is the number of steps to go.

    >>> sched = burn.lr_scheduler.LinearLrSchedulerConfig(0.9, 0.5, num_iters=4).init()
    >>> sched.step(), sched.record()
    (0.9, {'scheduler': 'LinearLrScheduler', 'remaining_iters': 4})
    """

    _state = ("remaining_iters",)

    def __init__(self, c: LinearLrSchedulerConfig) -> None:
        self.final_lr = c.final_lr
        self.step_size = (c.final_lr - c.initial_lr) / c.num_iters
        # one more than the steps to go, so the first step() (which counts down first) gives initial_lr
        self.remaining_iters = c.num_iters + 1

    def step(self) -> float:
        self.remaining_iters = max(self.remaining_iters - 1, 0)
        return self.final_lr - self.step_size * self.remaining_iters


class CosineAnnealingLrSchedulerConfig(Config):
    """min_lr + (initial_lr - min_lr) * (1 + cos(pi * t / num_iters)) / 2 for t = 0, 1, ..., num_iters,
    then restarting at t = 0 (SGDR warm restarts, as Burn).

    >>> sched = burn.lr_scheduler.CosineAnnealingLrSchedulerConfig(initial_lr=1.0, num_iters=4).init()
    >>> [round(sched.step(), 4) for _ in range(6)]
    [1.0, 0.8536, 0.5, 0.1464, 0.0, 1.0]
    """

    initial_lr: float
    num_iters: int
    min_lr: float = 0.0

    def init(self) -> CosineAnnealingLrScheduler:
        owner = "CosineAnnealingLrSchedulerConfig"
        _positive_lr(owner, "initial_lr", self.initial_lr)
        check(
            0 <= self.min_lr <= self.initial_lr,
            owner,
            f"min_lr must be in [0, initial_lr], got {self.min_lr}",
        )
        check(self.num_iters > 0, owner, f"num_iters must be > 0, got {self.num_iters}")
        return CosineAnnealingLrScheduler(self)


class CosineAnnealingLrScheduler(LrScheduler):
    """Built by ``CosineAnnealingLrSchedulerConfig.init()``; its record is the position in the cycle.

    >>> sched = burn.lr_scheduler.CosineAnnealingLrSchedulerConfig(1.0, num_iters=4, min_lr=0.5).init()
    >>> [round(sched.step(), 4) for _ in range(3)], sched.record()["current_iter"]
    ([1.0, 0.9268, 0.75], 2)
    """

    _state = ("current_iter",)

    def __init__(self, c: CosineAnnealingLrSchedulerConfig) -> None:
        self.max_lr, self.min_lr, self.num_iters = c.initial_lr, c.min_lr, c.num_iters
        self.current_iter = -1

    def step(self) -> float:
        self.current_iter = (self.current_iter + 1) % (self.num_iters + 1)
        cos = math.cos(math.pi * self.current_iter / self.num_iters)
        return self.min_lr + 0.5 * (self.max_lr - self.min_lr) * (1.0 + cos)


class ExponentialLrSchedulerConfig(Config):
    """initial_lr * gamma^t for t = 0, 1, ...; gamma in (0, 1].

    >>> sched = burn.lr_scheduler.ExponentialLrSchedulerConfig(initial_lr=1.0, gamma=0.5).init()
    >>> [sched.step() for _ in range(4)]
    [1.0, 0.5, 0.25, 0.125]
    """

    initial_lr: float
    gamma: float

    def init(self) -> ExponentialLrScheduler:
        _positive_lr("ExponentialLrSchedulerConfig", "initial_lr", self.initial_lr)
        check(
            0 < self.gamma <= 1, "ExponentialLrSchedulerConfig", f"gamma must be in (0, 1], got {self.gamma}"
        )
        return ExponentialLrScheduler(self)


class ExponentialLrScheduler(LrScheduler):
    """Built by ``ExponentialLrSchedulerConfig.init()``; its record is the step count.

    >>> sched = burn.lr_scheduler.ExponentialLrSchedulerConfig(0.1, gamma=0.9).init()
    >>> sched.step(), sched.record()
    (0.1, {'scheduler': 'ExponentialLrScheduler', 'iteration': 1})
    """

    _state = ("iteration",)

    def __init__(self, c: ExponentialLrSchedulerConfig) -> None:
        self.initial_lr, self.gamma = c.initial_lr, c.gamma
        self.iteration = 0

    def step(self) -> float:
        lr = self.initial_lr * self.gamma**self.iteration
        self.iteration += 1
        return lr


class NoamLrSchedulerConfig(Config):
    """init_lr * model_size^-0.5 * min(t^-0.5, t * warmup_steps^-1.5) for t = 1, 2, ... ("Attention Is
    All You Need").

    >>> sched = burn.lr_scheduler.NoamLrSchedulerConfig(init_lr=1.0, warmup_steps=2, model_size=4).init()
    >>> [round(sched.step(), 4) for _ in range(4)]   # up during warm-up, then down as 1 / sqrt(t)
    [0.1768, 0.3536, 0.2887, 0.25]
    """

    init_lr: float
    warmup_steps: int = 4000
    model_size: int = 512

    def init(self) -> NoamLrScheduler:
        _positive_lr("NoamLrSchedulerConfig", "init_lr", self.init_lr)
        check(
            self.warmup_steps > 0,
            "NoamLrSchedulerConfig",
            f"warmup_steps must be > 0, got {self.warmup_steps}",
        )
        check(self.model_size > 0, "NoamLrSchedulerConfig", f"model_size must be > 0, got {self.model_size}")
        return NoamLrScheduler(self)


class NoamLrScheduler(LrScheduler):
    """Built by ``NoamLrSchedulerConfig.init()``; its record is the step count.

    >>> sched = burn.lr_scheduler.NoamLrSchedulerConfig(1.0, warmup_steps=4000, model_size=512).init()
    >>> sched.step() < sched.step()   # still warming up
    True
    """

    _state = ("step_count",)

    def __init__(self, c: NoamLrSchedulerConfig) -> None:
        self.init_lr, self.warmup_steps, self.model_size = c.init_lr, c.warmup_steps, c.model_size
        self.step_count = 0

    def step(self) -> float:
        self.step_count += 1
        t = float(self.step_count)
        return self.init_lr * self.model_size**-0.5 * min(t**-0.5, t * self.warmup_steps**-1.5)


class StepLrSchedulerConfig(Config):
    """initial_lr * gamma^floor(t / step_size) for t = 0, 1, ...: (0.5, 3, 0.1) gives 0.5, 0.5, 0.5,
    0.05, ... As in Burn a gamma above 1 (a growing rate) is allowed but warned about.

    >>> sched = burn.lr_scheduler.StepLrSchedulerConfig(initial_lr=0.5, step_size=3, gamma=0.1).init()
    >>> [round(sched.step(), 4) for _ in range(4)]
    [0.5, 0.5, 0.5, 0.05]
    """

    initial_lr: float
    step_size: int
    gamma: float = 0.1

    def init(self) -> StepLrScheduler:
        _positive_lr("StepLrSchedulerConfig", "initial_lr", self.initial_lr)
        ok = isinstance(self.step_size, int) and self.step_size > 0
        check(ok, "StepLrSchedulerConfig", f"step_size must be an int > 0, got {self.step_size!r}")
        ok = math.isfinite(self.gamma) and self.gamma > 0
        check(ok, "StepLrSchedulerConfig", f"gamma must be a finite number > 0, got {self.gamma}")
        if self.gamma > 1:
            warnings.warn(
                f"StepLrSchedulerConfig: gamma={self.gamma} > 1 makes the learning rate grow; "
                "ignore this warning if it is intended",
                stacklevel=2,
            )
        return StepLrScheduler(self)


class StepLrScheduler(LrScheduler):
    """Built by ``StepLrSchedulerConfig.init()``; its record is the step count.

    >>> sched = burn.lr_scheduler.StepLrSchedulerConfig(0.5, step_size=3).init()
    >>> sched.step(), sched.record()
    (0.5, {'scheduler': 'StepLrScheduler', 'iteration': 1})
    """

    _state = ("iteration",)

    def __init__(self, c: StepLrSchedulerConfig) -> None:
        self.initial_lr, self.step_size, self.gamma = c.initial_lr, c.step_size, c.gamma
        self.iteration = 0

    def step(self) -> float:
        lr = self.initial_lr * self.gamma ** (self.iteration // self.step_size)
        self.iteration += 1
        return lr
