"""Background tuning of the real wgpu families on lavapipe: a new matmul or conv key runs its picked
kernel at once, tunes between steps, stores its winner and switches to it; the results equal the
blocking path's within the family's tolerance; a fused matmul epilogue planned under the picked kernel
is planned again after the switch, and recorded as a command list only once its kernels are tuned."""

from __future__ import annotations

import burn
import numpy as np
import pytest
from burn import autotune
from burn.fusion import Fusion
from burn.testing._events import autotune_events
from burn_wgpu import _conv, _matmul, _tuning

pytestmark = pytest.mark.usefixtures("dev")  # skips where wgpu cannot run


def _backend(folder, monkeypatch, blocking: bool):
    """A backend whose tuner is made under an empty cache folder, tuning the ``fast`` set."""
    from burn_wgpu._backend import WgpuBackend

    monkeypatch.setenv("BURN_CACHE_DIR", str(folder))
    monkeypatch.setenv("BURN_AUTOTUNE", "fast")
    if blocking:
        monkeypatch.setenv("BURN_AUTOTUNE_BLOCKING", "1")
    else:
        monkeypatch.delenv("BURN_AUTOTUNE_BLOCKING", raising=False)
    backend = WgpuBackend(0)
    backend.device = burn.device("wgpu")
    return backend


def _steps_until_tuned(call, limit: int = 200) -> list[np.ndarray]:
    """A training loop's shape: call the op once per step, then the step's drain (a small budget)."""
    outs = []
    for _ in range(limit):
        outs.append(call())
        if not autotune.pending():
            return outs
        autotune.tune_pending(0.01)
    raise AssertionError(f"still {autotune.pending()} jobs pending after {limit} steps")


def test_matmul_tunes_in_the_background_and_equals_the_blocking_path(tmp_path, monkeypatch):
    rng = np.random.default_rng(0)
    a, b = (
        rng.standard_normal((256, 320), dtype=np.float32),
        rng.standard_normal((320, 192), dtype=np.float32),
    )
    backend = _backend(tmp_path / "bg", monkeypatch, blocking=False)
    pa, pb = backend.from_numpy(a, burn.float32), backend.from_numpy(b, burn.float32)
    key = "float32 m256 n256 k512 1 nn"
    with autotune_events() as seen:
        first = backend.to_numpy(backend.matmul(pa, pb))
    picked = _matmul.MATMUL.picked(backend, pa, pb)
    tuning = [e for e in seen if e.kind == "autotune"]
    assert [(e.step, e.background, e.done) for e in tuning] == [(0, True, False)]  # queued, not run
    assert autotune.pending() == 1 and backend._autotuner._chosen[("matmul", key)] == picked
    outs = [first] + _steps_until_tuned(lambda: backend.to_numpy(backend.matmul(pa, pb)))
    entry = backend._autotuner.cache.get(f"matmul|{key}")
    assert entry is not None and entry["best"] == backend._autotuner._chosen[("matmul", key)]
    for out in outs:
        assert _tuning.close(out, a @ b)
    blocking = _backend(tmp_path / "blocking", monkeypatch, blocking=True)
    want = blocking.to_numpy(
        blocking.matmul(blocking.from_numpy(a, burn.float32), blocking.from_numpy(b, burn.float32))
    )
    assert blocking._autotuner.cache.get(f"matmul|{key}") is not None and autotune.pending() == 0
    assert _tuning.close(outs[0], want) and _tuning.close(outs[-1], want)


def test_conv_runs_its_picked_kernel_then_the_winner(tmp_path, monkeypatch):
    """The digits CNN's second conv at batch 128: the rule picks the direct kernel (a 4x4 output fills a
    quarter of an implicit GEMM tile)."""
    rng = np.random.default_rng(1)
    x = rng.standard_normal((128, 16, 4, 4), dtype=np.float32)
    w = rng.standard_normal((32, 16, 3, 3), dtype=np.float32)
    bias = rng.standard_normal(32, dtype=np.float32)
    backend = _backend(tmp_path, monkeypatch, blocking=False)
    px, pw, pbias = (backend.from_numpy(v, burn.float32) for v in (x, w, bias))
    args = (px, pw, pbias, (1, 1), (1, 1), (1, 1), 1)
    assert _conv.CONV2D.picked(backend, *args) == "direct"
    reference = backend.to_numpy(_conv.conv2d_im2col(backend, *args))
    outs = _steps_until_tuned(lambda: backend.to_numpy(_conv.conv2d(backend, *args)))
    assert len(outs) > 1  # the first call did not wait for the tuning
    key = _conv._conv_key(backend, *args)
    assert (
        backend._autotuner.cache.get(f"conv2d|{key}")["best"] == backend._autotuner._chosen[("conv2d", key)]
    )
    for out in outs:
        assert _tuning.close(out, reference)


def test_a_switch_replans_a_fused_matmul_epilogue(tmp_path, monkeypatch):
    """Picked: the plain tiled kernel, which takes no epilogue; the winner of the fast set is a
    register-blocked kernel, which does: after the switch the step is planned (and recorded) again with
    the epilogue fused, with the same results."""
    from burn_wgpu._backend import WgpuBackend

    monkeypatch.setenv("BURN_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("BURN_AUTOTUNE", "fast")
    monkeypatch.delenv("BURN_AUTOTUNE_BLOCKING", raising=False)
    family = _matmul.MATMUL
    object.__setattr__(family, "pick", lambda *args: "tile64_k16")
    try:
        inner = WgpuBackend(0)
        inner.device = burn.device("wgpu")
        fb = Fusion(inner)
        rng = np.random.default_rng(2)
        w = rng.standard_normal((256, 256), dtype=np.float32)
        pw = fb.from_numpy(w, burn.float32)
        xs = [rng.standard_normal((256, 256), dtype=np.float32) for _ in range(12)]

        def step(x):
            y = fb.unary("relu", fb.binary("add", fb.matmul(fb.from_numpy(x, burn.float32), pw), 0.5))
            return fb.to_numpy(y)

        outs = [step(x) for x in xs[:4]]
        assert fb.stats["replans"] == 0 and autotune.pending() == 1
        assert fb.stats["graphs"] == 0  # the step calls a kernel still tuning: not recorded yet
        generation = autotune.generation()
        assert autotune.wait() == 1
        best = inner._autotuner._chosen[("matmul", "float32 m256 n256 k256 1 nn")]
        assert best in _matmul.BLOCKED, best  # a register-blocked kernel beats the plain tiles
        assert autotune.generation() == generation + 1
        plans = fb.stats["plans"]
        outs += [step(x) for x in xs[4:]]
        assert fb.stats["replans"] == 1 and fb.stats["plans"] == plans + 1
        assert fb.stats["graphs"] == 1, fb.runtime.capture_failures  # tuned: recorded as a command list
        for x, out in zip(xs, outs):
            assert _tuning.close(out, np.maximum(x @ w + 0.5, 0))
    finally:
        object.__setattr__(family, "pick", _matmul._pick)


_TWO_STEPS = r"""
import json, sys
import numpy as np
import burn
from burn import autotune
dev = burn.device("wgpu", autodiff=True)
rng = np.random.default_rng(0)
x = burn.tensor(rng.standard_normal((8, 3, 16, 16)).astype(np.float32), device=dev)
w = burn.tensor(rng.standard_normal((16, 3, 3, 3)).astype(np.float32) * 0.2, device=dev).require_grad()
m = burn.tensor(rng.standard_normal((256, 320)).astype(np.float32), device=dev)
n = burn.tensor(rng.standard_normal((320, 192)).astype(np.float32), device=dev)
events = []
autotune.subscribe(lambda e: events.append(e.kind))
loss = burn.nn.functional.conv2d(x, w, padding=1).square().mean() + (m @ n).mean()
w.grad(loss.backward())
value = loss.item()  # runs the step (fusion records lazily): its tunable kernels meet their keys
autotune.wait()  # the first process finishes its tuning before it exits
print(json.dumps({"seconds": autotune.seconds(), "tuned": events.count("autotune"), "loss": value}))
"""


def test_a_second_process_with_the_same_cache_tunes_nothing(tmp_path):
    """Two fresh processes run the same conv and matmul step over one ``BURN_CACHE_DIR``: the first
    tunes (in the background, finished by ``wait()``) and stores the winners; the second finds every
    key in the cache, tunes nothing and spends no tuning time, and computes the same loss."""
    import json
    import os
    import subprocess
    import sys

    env = dict(os.environ, BURN_CACHE_DIR=str(tmp_path), BURN_AUTOTUNE="fast")
    env.pop("BURN_AUTOTUNE_BLOCKING", None)
    runs = []
    for _ in range(2):
        proc = subprocess.run([sys.executable, "-c", _TWO_STEPS], capture_output=True, text=True, env=env)
        assert proc.returncode == 0, proc.stderr[-2000:]
        runs.append(json.loads(proc.stdout.strip().splitlines()[-1]))
    first, second = runs
    assert first["tuned"] > 0 and first["seconds"] > 0.0
    assert second["tuned"] == 0 and second["seconds"] == 0.0
    assert abs(first["loss"] - second["loss"]) <= 1e-4 * max(1.0, abs(first["loss"]))
