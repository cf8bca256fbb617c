"""float64/int64 numpy data on wgpu: a native device whose adapter has ``shader-f64``/``shader-int64``
keeps the dtypes, silently; browser-portable mode (WebGPU has no 64-bit types) narrows float64 to
float32 with one warning per process, and an explicit dtype is silent. Each case runs in a fresh
process: the warning is once per process, and the mode is read when the first device is built."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

_SCRIPT = """
import warnings, numpy as np, burn
warnings.simplefilter("always")
with warnings.catch_warnings(record=True) as seen:
    warnings.simplefilter("always")
    dev = burn.device("wgpu")
    a = burn.tensor(np.linspace(0, 1, 5), device=dev)
    b = burn.tensor(np.linspace(0, 1, 5), device=dev)
    c = burn.tensor(np.ones(3), device=dev, dtype=burn.float32)
    d = burn.tensor(np.ones(3), device="cpu").to(dev)
    e = burn.tensor(np.arange(3), device=dev)
print(a.dtype.name, b.dtype.name, c.dtype.name, d.dtype.name, e.dtype.name)
print(sorted(x.name for x in dev.backend.dtypes if x.itemsize == 8))
for w in seen:
    print("WARNING", w.category.__name__, w.message)
"""


def _run(portable: bool) -> list[str]:
    env = {**os.environ, "BURN_WGPU_PORTABLE": "1" if portable else "0"}
    out = subprocess.run(
        [sys.executable, "-c", _SCRIPT], capture_output=True, text=True, timeout=120, env=env
    )
    assert out.returncode == 0, out.stderr
    return out.stdout.splitlines()


def test_portable_mode_narrows_float64_with_one_warning(dev):  # dev: skips where wgpu cannot run
    lines = _run(portable=True)
    assert lines[0] == "float32 float32 float32 float32 int32"
    assert lines[1] == "[]"
    warned = [line for line in lines if line.startswith("WARNING")]
    assert len(warned) == 2, lines  # float64 once, int64 once
    assert "UserWarning backend 'wgpu' has no float64: float64 data becomes float32" in warned[0]
    assert "has no int64: int64 data becomes int32" in warned[1]


def test_native_device_keeps_64_bit_dtypes(backend):
    if not {"shader-f64", "shader-int64"} <= set(backend.ctx.adapter.features):
        pytest.skip("this adapter has no shader-f64/shader-int64")
    lines = _run(portable=False)
    assert lines[0] == "float64 float64 float32 float64 int64"
    assert lines[1] == "['float64', 'int64']"
    assert not [line for line in lines if line.startswith("WARNING")], lines
