"""A float64 numpy array sent to wgpu (no 64-bit types in WGSL) becomes float32 with one warning per
process; an explicit dtype is silent. Run in a fresh process: the warning is once per process."""

from __future__ import annotations

import subprocess
import sys

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
print(a.dtype.name, b.dtype.name, c.dtype.name, d.dtype.name)
for w in seen:
    print("WARNING", w.category.__name__, w.message)
"""


def test_float64_to_wgpu_warns_once(dev):  # dev: skips where wgpu cannot run
    out = subprocess.run([sys.executable, "-c", _SCRIPT], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0] == "float32 float32 float32 float32"
    warned = [line for line in lines if line.startswith("WARNING")]
    assert len(warned) == 1, out.stdout
    assert "UserWarning backend 'wgpu' has no float64: float64 data becomes float32" in warned[0]
