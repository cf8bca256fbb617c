"""The autotuner's timer: timestamp queries where the adapter offers ``timestamp-query`` (lavapipe
does), host timing otherwise or with ``BURN_WGPU_TIMER=host``; implausible readings fall back to the
host timer. Also the tuner of a backend uses it."""

from __future__ import annotations

import time

import burn
import numpy as np
import pytest
from burn_wgpu import _matmul, _timer, _tuning
from burn_wgpu._kernels import matmul as KM


@pytest.fixture
def stamped(backend):
    if "timestamp-query" not in backend.ctx.features:
        pytest.skip("the adapter has no timestamp-query")
    return backend


def _work(backend, n):
    a = backend.from_numpy(np.ones((n, n), np.float32), burn.float32)
    return lambda: _matmul.matmul_blocked(backend, a, a, KM.BLOCKS[0])


def test_gpu_timer_measures_device_time(stamped):
    timer = _timer.GpuTimer(stamped, warmup=1, reps=3)
    small, large = _work(stamped, 16), _work(stamped, 192)
    spans = timer.durations(large)
    assert len(spans) == 3 and all(s > 0 for s in spans)
    t_small, t_large = timer(small), timer(large)
    assert timer.last_source == "gpu" and 0 < t_small and 0 < t_large
    # no ratio between the two: on a fast GPU both are launch-bound (an H200 timed them 12 and 33 us)
    start = time.perf_counter()
    large()
    stamped.sync()
    assert t_large < 10 * (time.perf_counter() - start) + 0.05  # same order as a synced wall time


def test_implausible_readings_fall_back_to_host(stamped, monkeypatch):
    timer = _timer.GpuTimer(stamped, reps=2)

    def broken(fn):
        raise ValueError("timestamps out of range")

    monkeypatch.setattr(timer, "durations", broken)
    assert timer(_work(stamped, 16)) > 0 and timer.last_source == "host"


def test_timer_choice_and_env(backend, monkeypatch):
    monkeypatch.setenv("BURN_WGPU_TIMER", "host")
    assert not isinstance(_timer.timer_for(backend), _timer.GpuTimer)
    monkeypatch.setenv("BURN_WGPU_TIMER", "gpu")
    expected = "timestamp-query" in backend.ctx.features
    assert isinstance(_timer.timer_for(backend), _timer.GpuTimer) == expected
    monkeypatch.setenv("BURN_WGPU_TIMER", "sundial")
    with pytest.raises(ValueError, match="BURN_WGPU_TIMER"):
        _timer.timer_for(backend)
    with pytest.raises(ValueError, match="reps"):
        _timer.GpuTimer(backend, reps=0)


def test_tuner_times_on_the_gpu(tmp_path, monkeypatch):
    monkeypatch.setenv("BURN_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("BURN_WGPU_TIMER", raising=False)
    from burn_wgpu._backend import WgpuBackend

    fresh = WgpuBackend(0)
    fresh.device = "wgpu:test"
    timer = _tuning.tuner(fresh).timer
    assert isinstance(timer, _timer.GpuTimer) == ("timestamp-query" in fresh.ctx.features)


def test_nested_timing_uses_its_own_queries(stamped):
    """A timed call that times something itself (a conv candidate tuning its matmul) must not
    overwrite the outer call's timestamps."""
    timer = _timer.GpuTimer(stamped, warmup=0, reps=2)
    work = _work(stamped, 64)
    inner: list[list[float]] = []

    def outer():
        work()
        if len(inner) < 1:
            inner.append(timer.durations(work))

    spans = timer.durations(outer)
    assert len(inner) == 1 and len(inner[0]) == 2 and all(s > 0 for s in inner[0])
    assert len(spans) == 2 and all(s > 0 for s in spans)
