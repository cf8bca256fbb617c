"""The wgpu matmul family tunes for real (on lavapipe in CI): every tile shape is checked against the
default kernel and timed, the winner is cached per adapter, a second process does no tuning, the off
switch skips it, pipeline compiles are events too, and the events reach the dashboard's panel."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import textwrap

import burn
import numpy as np
import pytest
from burn.testing._events import autotune_events

pytestmark = pytest.mark.usefixtures("dev")  # skips where wgpu cannot run


@pytest.fixture
def fresh_cache(tmp_path, monkeypatch):
    """An empty cache folder, and a backend built after it (the tuner is made on first use)."""
    monkeypatch.setenv("BURN_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("BURN_AUTOTUNE_BLOCKING", "1")  # tests the tuning run, made at once
    monkeypatch.delenv("BURN_AUTOTUNE", raising=False)
    from burn_wgpu._backend import WgpuBackend

    backend = WgpuBackend(0)
    backend.device = burn.device("wgpu")
    return tmp_path, backend


@pytest.fixture
def events():
    with autotune_events() as seen:
        yield seen


def _operands(backend, m=256, k=256, n=192, transpose_b=False):
    rng = np.random.default_rng(0)
    a = rng.standard_normal((m, k), dtype=np.float32)
    b = rng.standard_normal((n, k) if transpose_b else (k, n), dtype=np.float32)
    pa, pb = backend.from_numpy(a, burn.float32), backend.from_numpy(b, burn.float32)
    if transpose_b:
        pb, b = backend.permute(pb, (1, 0)), b.T
    return a, b, pa, pb


def test_matmul_tunes_checks_and_caches(fresh_cache, events):
    folder, backend = fresh_cache
    a, b, pa, pb = _operands(backend)
    out = backend.to_numpy(backend.matmul(pa, pb))
    np.testing.assert_allclose(out, a @ b, rtol=1e-4, atol=1e-3)
    tuned = [e for e in events if e.kind == "autotune"]
    assert tuned[-1].done and tuned[-1].best and tuned[-1].key == "float32 m256 n256 k256 1 nn"
    assert [e.step for e in tuned if not e.done] == list(range(1, tuned[-1].total + 1))
    assert any(e.kind == "compile" for e in events)  # each tile shape's pipeline compiles once
    (path,) = folder.glob("autotune/*.json")
    data = json.loads(path.read_text())
    entry = data["entries"]["matmul|float32 m256 n256 k256 1 nn"]
    assert entry["best"] == tuned[-1].best and not entry["dropped"]
    assert len(entry["seconds"]) == tuned[-1].total and "burn-wgpu" in data["fingerprint"]
    events.clear()
    backend.to_numpy(backend.matmul(pa, pb))  # same key: no tuning, no new pipeline
    assert [e for e in events if e.kind == "autotune"] == []


def test_transposed_operands_are_their_own_key_and_correct(fresh_cache, events):
    _, backend = fresh_cache
    a, b, pa, pb = _operands(backend, transpose_b=True)
    np.testing.assert_allclose(backend.to_numpy(backend.matmul(pa, pb)), a @ b, rtol=1e-4, atol=1e-3)
    assert [e.key for e in events if e.done and e.kind == "autotune"] == ["float32 m256 n256 k256 1 nt"]


def test_off_switch_and_small_matmuls_do_not_tune(fresh_cache, events, monkeypatch):
    _, backend = fresh_cache
    a, b, pa, pb = _operands(backend, 8, 8, 8)  # tiny: never worth tuning
    backend.to_numpy(backend.matmul(pa, pb))
    monkeypatch.setenv("BURN_AUTOTUNE", "off")
    a, b, pa, pb = _operands(backend)
    np.testing.assert_allclose(backend.to_numpy(backend.matmul(pa, pb)), a @ b, rtol=1e-4, atol=1e-3)
    assert [e for e in events if e.kind in ("autotune", "cache")] == []


_SECOND = textwrap.dedent(
    """
    import numpy as np, burn
    from burn import autotune
    seen = []
    autotune.subscribe(seen.append)
    d = burn.device("wgpu")
    x = burn.tensor(np.ones((256, 256), np.float32), device=d)
    (x @ x).numpy()
    print(sorted({e.kind for e in seen if e.kind != "compile"}))
    """
)


def test_a_second_process_only_reads_the_cache(fresh_cache):
    folder, _ = fresh_cache
    env = {**os.environ, "BURN_CACHE_DIR": str(folder)}
    first = subprocess.run(
        [sys.executable, "-c", _SECOND], capture_output=True, text=True, env=env, timeout=300
    )
    second = subprocess.run(
        [sys.executable, "-c", _SECOND], capture_output=True, text=True, env=env, timeout=300
    )
    assert first.returncode == 0 and second.returncode == 0, first.stderr + second.stderr
    assert first.stdout.strip() == "['autotune']"
    assert second.stdout.strip() == "['cache']"


def test_tuning_events_reach_the_dashboard_panel(fresh_cache):
    pytest.importorskip("rich")
    from burn_train import TrainingInterrupter
    from burn_train._events import StartEvent
    from burn_train.metric import LossMetric
    from burn_train.processor import MetricsHub, MetricSlot, ThreadedProcessor
    from burn_train.renderer import TuiRenderer
    from rich.console import Console

    _, backend = fresh_cache
    console = Console(record=True, width=120, height=34, file=io.StringIO(), color_system=None)
    renderer = TuiRenderer(console=console, keys=False, fps=20)
    hub = MetricsHub({"train": [MetricSlot(LossMetric())]}, renderer, [], TrainingInterrupter())
    proc = ThreadedProcessor(hub)
    proc.start()
    proc.submit(StartEvent(1, 1, {"train": 1}))
    _, _, pa, pb = _operands(backend)
    backend.to_numpy(backend.matmul(pa, pb))  # tunes on this thread; the processor draws meanwhile
    proc.flush()
    renderer.draw()
    frame = renderer.last_frame
    proc.close()
    assert "✓ autotuning matmul [float32 m256 n256 k256" in frame, frame  # the line is cut to the panel
    assert "✓ compiling matmul_float32_0b_" in frame, frame
    snap = hub.state.snapshot()
    assert snap.autotune_count >= 6 and not snap.autotune_active
