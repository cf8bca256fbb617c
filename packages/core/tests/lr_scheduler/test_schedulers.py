"""Learning-rate schedules against their closed forms; invalid values raise burn.ConfigError."""

import math

import burn
import pytest
from burn import lr_scheduler as S


def take(sched, n):
    return [sched.step() for _ in range(n)]


def test_linear_follows_burn():
    # Burn's test_lr_decreasing: the first step() gives initial_lr itself
    assert take(S.LinearLrSchedulerConfig(0.9, 0.5, 4).init(), 6) == pytest.approx(
        [0.9, 0.8, 0.7, 0.6, 0.5, 0.5]
    )


def test_cosine_annealing_with_restarts():
    got = take(S.CosineAnnealingLrSchedulerConfig(1.0, 4, min_lr=0.2).init(), 7)
    ref = [0.2 + 0.4 * (1 + math.cos(math.pi * (i % 5) / 4)) for i in range(7)]
    assert got == pytest.approx(ref)
    assert got[0] == pytest.approx(1.0) and got[4] == pytest.approx(0.2) and got[5] == pytest.approx(1.0)


def test_exponential_step_noam_constant():
    assert take(S.ExponentialLrSchedulerConfig(0.5, 0.9).init(), 4) == pytest.approx(
        [0.5 * 0.9**i for i in range(4)]
    )
    assert take(S.StepLrSchedulerConfig(1.0, step_size=3, gamma=0.5).init(), 7) == pytest.approx(
        [1, 1, 1, 0.5, 0.5, 0.5, 0.25]
    )
    noam = take(S.NoamLrSchedulerConfig(2.0, warmup_steps=3, model_size=16).init(), 6)
    ref = [2.0 / 4 * min(t**-0.5, t * 3**-1.5) for t in range(1, 7)]
    assert noam == pytest.approx(ref)
    assert max(range(6), key=lambda i: noam[i]) == 2  # peaks at the end of warm-up
    assert take(S.ConstantLr(0.1), 3) == [0.1, 0.1, 0.1]


@pytest.mark.parametrize(
    "config, match",
    [
        (S.LinearLrSchedulerConfig(-0.1, 0.0, 10), "initial_lr"),
        (S.LinearLrSchedulerConfig(0.1, 0.0, 0), "num_iters"),
        (S.CosineAnnealingLrSchedulerConfig(0.1, 10, min_lr=0.5), "min_lr"),
        (S.ExponentialLrSchedulerConfig(0.1, 1.5), "gamma"),
        (S.ExponentialLrSchedulerConfig(float("nan"), 0.5), "initial_lr"),
        (S.NoamLrSchedulerConfig(0.1, warmup_steps=0), "warmup_steps"),
        (S.StepLrSchedulerConfig(0.1, step_size=0), "step_size"),
        (S.StepLrSchedulerConfig(0.1, step_size=2, gamma=0.0), "gamma"),
    ],
)
def test_invalid_values_raise_config_error(config, match):
    with pytest.raises(burn.ConfigError, match=match):
        config.init()


@pytest.mark.parametrize(
    "config",
    [
        S.LinearLrSchedulerConfig(0.9, 0.1, 5),
        S.CosineAnnealingLrSchedulerConfig(1.0, 3),
        S.ExponentialLrSchedulerConfig(0.5, 0.8),
        S.NoamLrSchedulerConfig(1.0, 4, 8),
        S.StepLrSchedulerConfig(1.0, 2),
    ],
)
def test_record_round_trip_resumes(config):
    a = config.init()
    take(a, 3)
    b = config.init().load_record(a.record())
    assert take(b, 4) == take(a, 4)
    with pytest.raises(burn.RecordError):
        S.ConstantLr(0.1).load_record(a.record())
