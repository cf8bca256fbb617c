"""Tuning in the background: a new key runs the family's picked candidate at once, ``tune_pending`` works
through the queued job between steps within its budget, the key switches to the winner afterwards (the
outputs staying equal), ``generation`` makes fused programs re-plan, jobs hold no arguments from steps
older than the last one, and ``BURN_AUTOTUNE_BLOCKING=1`` restores tuning before the call returns."""

from __future__ import annotations

import gc
import time
import weakref
from collections import Counter

import burn
import numpy as np
import pytest
from burn import autotune
from burn.autotune import Autotuner, Candidate, Family
from burn.fusion import Fusion
from burn.fusion._reference import ReferenceRuntime
from burn.testing._events import autotune_events


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("BURN_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("BURN_AUTOTUNE", raising=False)
    monkeypatch.delenv("BURN_AUTOTUNE_BLOCKING", raising=False)
    monkeypatch.delenv("BURN_AUTOTUNE_BUDGET_MS", raising=False)
    return tmp_path


class Arr(np.ndarray):
    """An array that a weak reference can follow (to see when a job lets go of its arguments)."""


def _family(calls: Counter, pick: str | None = "slow") -> Family:
    """Three candidates computing ``2 x``: the reference, a slow one (the picked default) and a fast one."""

    def make(name: str, seconds: float):
        def fn(x):
            calls[name] += 1
            time.sleep(seconds)
            return np.asarray(x) * 2

        return Candidate(name, fn)

    return Family(
        name="double",
        candidates=(make("reference", 0.003), make("slow", 0.006), make("fast", 0.0)),
        key=lambda x: f"n={autotune.bucket(x.size)}",
        reference="reference",
        default="slow",
        pick=(lambda x: pick) if pick else None,
    )


def _tuner() -> Autotuner:
    return Autotuner("bg-device|driver 1", "test:0", autotune.median_timer(lambda: None, 1, 3), np.asarray)


def test_a_new_key_runs_the_picked_candidate_only_and_queues_its_tuning(cache):
    calls = Counter()
    fam, tuner = _family(calls), _tuner()
    x = np.arange(5.0)
    with autotune_events() as seen:
        out = tuner.run(fam, x)
    assert calls == Counter(slow=1)  # nothing checked or timed before the op returned
    np.testing.assert_array_equal(out, x * 2)
    assert autotune.pending() == 1
    assert [(e.background, e.pending, e.total, e.done) for e in seen] == [(True, 1, 3, False)]
    assert "(background, 1 pending)" in seen[0].describe()
    assert tuner.cache.get("double|n=5") is None


def test_tune_pending_runs_the_job_within_budget_then_the_winner_serves(cache):
    calls = Counter()
    fam, tuner = _family(calls), _tuner()
    x = np.arange(5.0)
    default_out = tuner.run(fam, x)
    generation = autotune.generation()
    units = 0
    with autotune_events() as seen:
        while autotune.pending():  # a training loop: a call of the key per step, then the step's drain
            if units:
                np.testing.assert_array_equal(tuner.run(fam, x), default_out)
            start = time.perf_counter()
            settled = autotune.tune_pending(0.0)  # a zero budget: one unit per call
            assert time.perf_counter() - start < 1.0
            units += 1
            assert units < 20
    # 3 checks (the first after the reference's run), then 2 timing passes over 3 candidates
    assert units == 3 + 2 * 3 and settled == 1
    assert calls["reference"] > 1 and calls["fast"] > 1
    assert seen[-1].done and seen[-1].best == "fast" and seen[-1].pending == 0 and seen[-1].background
    assert tuner.cache.get("double|n=5")["best"] == "fast"
    assert autotune.generation() == generation + 1  # the key switched from "slow" to "fast"
    calls.clear()
    np.testing.assert_array_equal(tuner.run(fam, x), default_out)  # the winner's output is the default's
    assert calls == Counter(fast=1)


def test_a_budget_runs_several_units_and_wait_drains_everything(cache, monkeypatch):
    calls = Counter()
    fam, tuner = _family(calls), _tuner()
    tuner.run(fam, np.arange(5.0))
    tuner.run(fam, np.arange(100.0))  # another key: a second job
    assert autotune.pending() == 2
    monkeypatch.setenv("BURN_AUTOTUNE_BUDGET_MS", "1000")
    assert autotune.tune_pending() == 2 and autotune.pending() == 0
    tuner.run(fam, np.arange(500.0))
    assert autotune.wait() == 1 and autotune.pending() == 0
    monkeypatch.setenv("BURN_AUTOTUNE_BUDGET_MS", "soon")
    with pytest.raises(ValueError, match="BURN_AUTOTUNE_BUDGET_MS: expected milliseconds"):
        autotune.tune_pending()
    with pytest.raises(ValueError, match="budget_s must be >= 0"):
        autotune.tune_pending(-1.0)


def test_a_second_tuner_uses_what_the_background_stored(cache):
    calls = Counter()
    fam = _family(calls)
    _tuner().run(fam, np.arange(5.0))
    autotune.wait()
    calls.clear()
    with autotune_events() as seen:
        _tuner().run(fam, np.arange(5.0))
    assert calls == Counter(fast=1) and autotune.pending() == 0
    assert [e.kind for e in seen] == ["cache"]


def test_a_job_holds_no_arguments_from_before_the_last_step(cache):
    calls = Counter()
    fam, tuner = _family(calls), _tuner()
    x = np.arange(5.0).view(Arr)
    alive = weakref.ref(x)
    tuner.run(fam, x)
    del x
    autotune.tune_pending(0.0)  # the step that called it ends: one unit, the arguments kept
    gc.collect()
    assert alive() is not None
    autotune.tune_pending(0.0)  # a step without a call of the key ends: the arguments go
    gc.collect()
    assert alive() is None
    assert autotune.pending() == 1 and autotune.tune_pending(0.0) == 0  # nothing to run it on
    y = np.arange(5.0) + 1
    tuner.run(fam, y)  # the next call arms the job again; the reference runs on the new inputs
    assert autotune.wait() == 1
    assert tuner.cache.get("double|n=5")["best"] == "fast"


def test_pick_falls_back_to_the_default(cache):
    calls = Counter()
    tuner = _tuner()
    tuner.run(_family(calls, pick="no-such-kernel"), np.arange(5.0))
    tuner.run(_family(calls, pick=None), np.arange(100.0))
    assert calls == Counter(slow=2)


def test_a_wrong_picked_candidate_is_dropped_and_replaced(cache):
    def wrong(x):
        return np.asarray(x) * 3

    fam = Family(
        "double",
        (Candidate("reference", lambda x: np.asarray(x) * 2), Candidate("wrong", wrong)),
        key=lambda x: "k",
        reference="reference",
        pick=lambda x: "wrong",
    )
    tuner = _tuner()
    tuner.run(fam, np.arange(3.0))
    with pytest.warns(RuntimeWarning, match="candidate 'wrong' dropped"):
        autotune.wait()
    np.testing.assert_array_equal(tuner.run(fam, np.arange(3.0)), [0, 2, 4])


def test_a_failing_reference_stops_the_job_and_keeps_the_picked_candidate(cache):
    def broken(x):
        raise RuntimeError("no reference here")

    fam = Family(
        "double",
        (Candidate("reference", broken), Candidate("plain", lambda x: np.asarray(x) * 2)),
        key=lambda x: "k",
        reference="reference",
        pick=lambda x: "plain",
    )
    tuner = _tuner()
    tuner.run(fam, np.arange(3.0))
    with pytest.warns(RuntimeWarning, match="reference 'reference' failed .*keeps running 'plain'"):
        assert autotune.wait() == 1
    np.testing.assert_array_equal(tuner.run(fam, np.arange(3.0)), [0, 2, 4])
    assert tuner.cache.get("double|k") is None and autotune.pending() == 0


def test_blocking_env_tunes_before_the_call_returns(cache, monkeypatch):
    monkeypatch.setenv("BURN_AUTOTUNE_BLOCKING", "1")
    assert autotune.blocking()
    calls = Counter()
    fam, tuner = _family(calls), _tuner()
    generation = autotune.generation()
    with autotune_events() as seen:
        tuner.run(fam, np.arange(5.0))
    assert autotune.pending() == 0 and autotune.generation() == generation
    assert calls["reference"] > 1 and calls["fast"] > 1 and calls["slow"] > 1
    assert not any(e.background for e in seen) and seen[-1].done and seen[-1].best == "fast"
    calls.clear()
    tuner.run(fam, np.arange(5.0))
    assert calls == Counter(fast=1)


@pytest.mark.parametrize("value, ran", [("cache-only", "slow"), ("off", "slow")])
def test_cache_only_and_off_queue_nothing(cache, monkeypatch, value, ran):
    monkeypatch.setenv("BURN_AUTOTUNE", value)
    calls = Counter()
    _tuner().run(_family(calls, pick="fast"), np.arange(5.0))
    assert calls == Counter({ran: 1}) and autotune.pending() == 0


def test_fast_mode_tunes_in_the_background_too(cache, monkeypatch):
    monkeypatch.setenv("BURN_AUTOTUNE", "fast")
    calls = Counter()
    _tuner().run(_family(calls), np.arange(5.0))
    assert calls == Counter(slow=1) and autotune.pending() == 1


class _TunedEpilogues(ReferenceRuntime):
    """A runtime whose matmul takes an epilogue only when the tuner chose the ``epilogue`` kernel (as
    burn-wgpu's register-blocked kernels do): a switch changes what planning does."""

    def __init__(self, backend, tuner, family):
        super().__init__(backend)
        self.tuner, self.family, self.asked = tuner, family, []

    def fuse_matmul(self, lhs, rhs):
        self.asked.append(self.tuner.choice(self.family, lhs, rhs))
        return self.asked[-1] == "epilogue"


def test_a_switch_makes_fused_programs_plan_again(cache):
    cpu = burn.device("cpu").backend
    family = Family(
        "matmul",
        (
            Candidate("plain", lambda a, b: (time.sleep(0.004), np.matmul(a, b))[1]),
            Candidate("epilogue", np.matmul),
        ),
        key=lambda a, b: f"{a.shape} {b.shape}",
        reference="plain",
    )
    runtime = _TunedEpilogues(cpu, _tuner(), family)
    b = Fusion(cpu, runtime=runtime)
    w = b.from_numpy(np.eye(3, dtype=np.float32) * 2, burn.float32)

    def step(i):
        x = b.from_numpy(np.arange(6.0, dtype=np.float32).reshape(2, 3) - i, burn.float32)
        return b.to_numpy(b.unary("relu", b.binary("add", b.matmul(x, w), 1.0)))

    outs = [step(i) for i in range(3)]
    assert (b.stats["plans"], b.stats["replays"], b.stats["replans"]) == (1, 2, 0)
    assert runtime.asked == ["plain"] and autotune.pending() == 1
    generation = autotune.generation()
    autotune.wait()
    assert autotune.generation() == generation + 1  # "epilogue" won: the key switched
    outs += [step(i) for i in range(3, 5)]
    assert (b.stats["plans"], b.stats["replays"], b.stats["replans"]) == (2, 3, 1)
    assert runtime.asked == ["plain", "epilogue"]  # planned again under the new choice
    for i, out in enumerate(outs):
        expected = np.maximum((np.arange(6.0).reshape(2, 3) - i) * 2 + 1, 0)
        np.testing.assert_allclose(out, expected, rtol=1e-6)


def test_mark_step_and_the_optimizers_run_the_queued_tuning(cache, monkeypatch):
    monkeypatch.setenv("BURN_AUTOTUNE_BUDGET_MS", "10000")
    calls = Counter()
    fam, tuner = _family(calls), _tuner()
    tuner.run(fam, np.arange(5.0))
    burn.fusion.mark_step(burn.device("cpu"))
    assert autotune.pending() == 0
    tuner.run(fam, np.arange(100.0))
    dev = burn.device("cpu", autodiff=True)
    model = burn.nn.LinearConfig(2, 1).init(dev)
    grads = model(burn.ones((4, 2), device=dev)).sum().backward()
    burn.optim.SgdConfig().init().step(1e-3, model, grads)
    assert autotune.pending() == 0


def test_a_process_that_ends_mid_tuning_leaves_its_progress_to_the_next(cache, capsys):
    import json

    from burn._cli import main
    from burn.autotune import _background

    calls = Counter()
    fam, x = _family(calls), np.arange(5.0)
    first = _tuner()
    for _ in range(4):  # four steps: the reference and 3 checks, then one timing
        first.run(fam, x)
        autotune.tune_pending(0.0)
    entry = first.cache.get("double|n=5")
    assert entry["partial"] and entry["checked"] == ["fast", "reference", "slow"] and len(entry["timed"]) == 1
    assert _background.discard() == 1  # the process ends with the job unfinished
    assert main(["autotune", "status", "--json"]) == 0  # the command line sees what is left
    (device,) = json.loads(capsys.readouterr().out)["devices"]
    assert device["tuned"] == 0 and device["tuning"] == {
        "double|n=5": {"checked": 3, "dropped": 0, "timed": 1}
    }
    calls.clear()
    second = _tuner()  # the next process: the same cache file
    units = 0
    while True:
        second.run(fam, x)
        if not autotune.pending():
            break
        autotune.tune_pending(0.0)
        units += 1
    assert units == 2 * 3 - 1  # only the timings left; no check runs again
    # no check ran again: 5 timings of 4 calls each (1 warm-up, 3 timed), each first timing after
    # another's also one probe run (``_slower_than_best``), the picked "slow" serving 5 steps, then
    # "fast" the last one
    assert calls == Counter(reference=4, slow=5 + 2 * 4 + 1, fast=2 * 4 + 1 + 1)
    assert second.cache.get("double|n=5")["best"] == "fast" and "partial" not in second.cache.get(
        "double|n=5"
    )


def test_a_candidate_far_slower_than_the_best_is_not_timed_in_full(cache):
    """One run of a candidate that takes over 3x the best timing and over 50 ms is its figure: no
    warm-up and repeated runs (a slow conv candidate on a software adapter took seconds per timing,
    far past a step's budget), and it does not win."""
    calls = Counter()

    def make(name: str, seconds: float):
        def fn(x):
            calls[name] += 1
            time.sleep(seconds)
            return np.asarray(x) * 2

        return Candidate(name, fn)

    fam = Family(
        name="crawl",
        candidates=(make("reference", 0.0), make("crawl", 0.08)),
        key=lambda x: f"n={x.size}",
        reference="reference",
    )
    from burn.autotune import _background

    _background.discard()  # another test's jobs (waiting for a call that never comes) would stay queued
    tuner, x = _tuner(), np.arange(4.0)
    longest = 0.0
    for _ in range(20):  # a training loop: the key called each step, then the step's drain
        tuner.run(fam, x)
        if not autotune.pending():
            break
        start = time.perf_counter()
        autotune.tune_pending(0.0)
        longest = max(longest, time.perf_counter() - start)
    assert not autotune.pending()
    assert calls["crawl"] == 2  # its check and the one run that showed it slower: never timed in full
    assert longest < 0.3  # a full timing (a warm-up and 3 runs) would take 0.32 s
    assert tuner.cache.get("crawl|n=4")["best"] == "reference"


@pytest.mark.parametrize("blocking", [False, True])
def test_calls_on_stand_in_values_neither_tune_nor_choose(cache, monkeypatch, blocking):
    """Fusion's compile-ahead planning pass runs calls on stand-in values (``stand_ins``): a new key
    runs its picked candidate, starts no job, arms none and chooses nothing; the next real call
    chooses and tunes as usual."""
    from burn.autotune._background import stand_ins

    if blocking:
        monkeypatch.setenv("BURN_AUTOTUNE_BLOCKING", "1")
    calls = Counter()
    fam, tuner = _family(calls), _tuner()
    x = np.arange(5.0)
    with stand_ins():
        np.testing.assert_array_equal(tuner.run(fam, x), x * 2)
    assert calls == Counter(slow=1) and autotune.pending() == 0
    tuner.run(fam, x)  # real values: chosen now (tuned now when blocking, queued otherwise)
    assert autotune.pending() == (0 if blocking else 1)
    if not blocking:
        job = tuner._jobs[("double", "n=5")]
        with stand_ins():
            tuner.run(fam, Arr((5,)))  # a chosen key still tuning: the stand-in is not armed
        assert job.args is not None and not isinstance(job.args[0], Arr)
    autotune.wait()
