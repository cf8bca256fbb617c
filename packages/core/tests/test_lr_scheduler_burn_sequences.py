"""Every scheduler's first steps pinned to Burn 0.16's sequences (crates/burn-core/src/lr_scheduler).

The expected values are written out by hand from Burn's formulas, not computed with the port's code:

- linear: ``remaining = num_iters + 1``; each step ``remaining -= 1 (not below 0)``, then
  ``lr = final - (final - initial) / num_iters * remaining``: the first step gives ``initial_lr``.
- cosine: ``t = (t + 1) % (num_iters + 1)`` from ``t = -1``;
  ``lr = min + (max - min) * (1 + cos(pi * t / num_iters)) / 2``: ``initial_lr`` first, restart after.
- exponential: ``prev = initial / gamma``; each step ``prev *= gamma``: initial, initial * gamma, ...
- noam: ``t += 1`` from 0; ``lr = init_lr * model_size^-0.5 * min(t^-0.5, t * warmup^-1.5)``.
- step: ``i += 1`` from -1; ``lr = initial * gamma^(i // step_size)``.
- constant: the same rate every step.

Burn compares with an absolute tolerance of 1e-10 (``LOOSE_EPSILON``); so do these tests.
"""

import json

import burn
import pytest
from burn import lr_scheduler as S

EPS = 1e-10


def take(sched, n):
    return [sched.step() for _ in range(n)]


SEQUENCES = [
    # Burn's linear tests: decreasing, increasing, unchanging
    ("linear-down", S.LinearLrSchedulerConfig(0.9, 0.5, 4), [0.9, 0.8, 0.7, 0.6, 0.5, 0.5]),
    ("linear-up", S.LinearLrSchedulerConfig(0.01, 0.04, 3), [0.01, 0.02, 0.03, 0.04, 0.04]),
    ("linear-flat", S.LinearLrSchedulerConfig(0.3, 0.3, 2), [0.3, 0.3, 0.3, 0.3]),
    # Burn's cosine test: cos(0), cos(pi/2), cos(pi), then the restart
    ("cosine-2", S.CosineAnnealingLrSchedulerConfig(0.5, 2, min_lr=0.1), [0.5, 0.3, 0.1, 0.5, 0.3]),
    # (1 + cos(pi/4)) / 2 = (1 + sqrt(2)/2) / 2 = 0.85355339059..., (1 - sqrt(2)/2) / 2 = 0.14644660940...
    (
        "cosine-4",
        S.CosineAnnealingLrSchedulerConfig(1.0, 4),
        [1.0, 0.8535533905932737, 0.5, 0.14644660940672624, 0.0, 1.0, 0.8535533905932737],
    ),
    # Burn's exponential test
    ("exponential", S.ExponentialLrSchedulerConfig(0.8, 0.1), [0.8, 0.08, 0.008, 0.0008, 0.00008]),
    # noam with init_lr 2, model_size 16 (factor 2 / 4 = 0.5), warmup 4 (4^-1.5 = 1/8):
    # t=1..4 warm up as 0.5 * t / 8; t=5, 6 decay as 0.5 / sqrt(t)
    (
        "noam",
        S.NoamLrSchedulerConfig(2.0, warmup_steps=4, model_size=16),
        [0.0625, 0.125, 0.1875, 0.25, 0.22360679774997896, 0.2041241452319315],
    ),
    # Burn's step tests: decreasing, increasing (gamma 2, warned about), unchanging
    (
        "step-down",
        S.StepLrSchedulerConfig(0.5, 3, 0.1),
        [0.5, 0.5, 0.5, 0.05, 0.05, 0.05, 0.005, 0.005, 0.005],
    ),
    ("step-up", S.StepLrSchedulerConfig(0.1, 2, 2.0), [0.1, 0.1, 0.2, 0.2, 0.4, 0.4]),
    ("step-flat", S.StepLrSchedulerConfig(3.1, 1, 1.0), [3.1, 3.1, 3.1]),
    ("step-default-gamma", S.StepLrSchedulerConfig(0.4, 2), [0.4, 0.4, 0.04, 0.04, 0.004, 0.004]),
]


@pytest.mark.filterwarnings("ignore:StepLrSchedulerConfig. gamma")
@pytest.mark.parametrize("config, expected", [s[1:] for s in SEQUENCES], ids=[s[0] for s in SEQUENCES])
def test_first_steps_match_burn(config, expected):
    got = take(config.init(), len(expected))
    assert all(isinstance(v, float) for v in got)
    assert got == pytest.approx(expected, rel=0, abs=EPS)


def test_constant_lr_and_plain_float_schedule():
    assert take(S.ConstantLr(0.3), 3) == [0.3, 0.3, 0.3]


def test_step_gamma_above_one_is_allowed_with_a_warning_as_in_burn():
    with pytest.warns(UserWarning, match="gamma=2.0 > 1"):
        S.StepLrSchedulerConfig(0.1, 2, 2.0).init()
    with pytest.raises(burn.ConfigError, match="gamma must be a finite number > 0, got -0.5"):
        S.StepLrSchedulerConfig(0.1, 2, -0.5).init()


# Burn's check_save_load: step `at` times, save and restore, then the next `at` steps must continue the
# uninterrupted sequence. The positions are Burn's (num_iters / 3 * 2, 7, 3 * step_size / 2).
SAVE_LOAD = [
    ("linear", S.LinearLrSchedulerConfig(1.0, 0.01, 6), 4),
    ("cosine", S.CosineAnnealingLrSchedulerConfig(1.0, 9), 6),
    ("exponential", S.ExponentialLrSchedulerConfig(0.083, 0.3), 7),
    ("step", S.StepLrSchedulerConfig(0.007, 10, 0.03), 15),
    ("noam", S.NoamLrSchedulerConfig(1.0, warmup_steps=3, model_size=4), 5),
]


@pytest.mark.parametrize("config, at", [s[1:] for s in SAVE_LOAD], ids=[s[0] for s in SAVE_LOAD])
def test_save_and_load_continue_the_sequence(config, at):
    truth = config.init()
    expected = take(truth, 2 * at)[at:]
    sched = config.init()
    take(sched, at)
    saved = json.loads(json.dumps(sched.record()))  # a record is plain numbers: JSON, npz, ...
    resumed = config.init().load_record(saved)
    assert take(resumed, at) == pytest.approx(expected, rel=0, abs=EPS)


def test_linear_resume_mid_schedule_gives_burns_tail():
    # after two steps (0.9, 0.8) the resumed scheduler goes on with 0.7, 0.6, 0.5, 0.5
    sched = S.LinearLrSchedulerConfig(0.9, 0.5, 4).init()
    assert take(sched, 2) == pytest.approx([0.9, 0.8], rel=0, abs=EPS)
    resumed = S.LinearLrSchedulerConfig(0.9, 0.5, 4).init().load_record(sched.record())
    assert take(resumed, 4) == pytest.approx([0.7, 0.6, 0.5, 0.5], rel=0, abs=EPS)
