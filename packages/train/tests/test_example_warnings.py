"""The digits example prints no warning of burn's own (issue 32): on wgpu, which has no int64, burn's
image batcher made the class targets as int64 and burn warned twice (train and valid loaders) to pass
``dtype=burn.int32``, advice the user could not follow. Each run shows every warning (``-W always``) and
the test fails on any that comes from burn's code."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import burn
import pytest

ROOT = Path(__file__).resolve().parents[3]
PACKAGES = str(ROOT / "packages")
WARNING_LINE = re.compile(r"^(?P<file>.+?):\d+: (?P<kind>\w*Warning): ")


def _usable(name: str) -> str:
    """'' when backend ``name`` can run here, else why not (cpu, numpy's, always can)."""
    if name == "cpu":
        return ""
    spec = next((b for b in burn.backends() if b.name == name), None)
    if spec is None:
        return f"backend {name} is not installed"
    return "" if spec.available else f"backend {name} unavailable: {spec.reason}"


@pytest.mark.parametrize("backend", ["cpu", "wgpu"])
def test_the_digits_example_prints_no_warning_of_burns_own(tmp_path, backend):
    why = _usable(backend)
    if why:
        pytest.skip(why)
    cmd = [
        sys.executable,
        "-W",
        "always",
        str(ROOT / "examples" / "train_digits.py"),
        "--backend",
        backend,
        "--epochs",
        "1",
        "--limit",
        "64",
        "--renderer",
        "none",
        "--no-plots",
        "--artifacts",
        str(tmp_path / "art"),
    ]
    out = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    warnings = [m for m in map(WARNING_LINE.match, out.stderr.splitlines()) if m]
    ours = [
        m.group(0) for m in warnings if m.group("file").startswith(PACKAGES) or "/burn" in m.group("file")
    ]
    assert not ours, out.stderr
