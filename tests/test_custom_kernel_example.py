"""``examples/custom_kernel.py`` as a user runs it: on cpu and on wgpu (lavapipe here; skipped with the
reason where no adapter is found), it prints its JSON report and exits 0 because the fused op agrees
with the unfused ops (forward, gradients, an Adam step) and its backward with finite differences."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import burn
import pytest

ROOT = Path(__file__).resolve().parents[1]


def _wgpu_reason() -> str | None:
    info = next((b for b in burn.backends() if b.name == "wgpu"), None)
    if info is None:
        return "burn-wgpu is not installed"
    return None if info.available else f"wgpu unavailable: {info.reason}"


@pytest.mark.parametrize("device", ["cpu", "wgpu"])
def test_example_agrees_and_exits_0(device):
    if device == "wgpu" and _wgpu_reason() is not None:
        pytest.skip(_wgpu_reason() or "")
    cmd = [sys.executable, str(ROOT / "examples" / "custom_kernel.py"), "--device", device]
    proc = subprocess.run(
        [*cmd, "--size", "32x48x40", "--reps", "2"], capture_output=True, text=True, timeout=600
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    assert report["agree"] is True and report["shape"] == [32, 48, 40]
    assert report["device"].startswith(device)
    assert report["forward_max_diff_vs_numpy"] < 1e-4 and report["check_grad_max_err"] < 1e-6
    assert report["fused_forward_ms"] > 0 and report["unfused_forward_ms"] > 0


def test_example_rejects_a_bad_size():
    cmd = [sys.executable, str(ROOT / "examples" / "custom_kernel.py"), "--size", "12x"]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and "--size" in proc.stderr


def test_readme_custom_ops_block_runs_as_written(tmp_path):
    """The README's "Custom ops and kernels" block runs as written, burn's warnings as errors."""
    import re

    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    match = re.compile(r"```python\n(.*?)```", re.S).search(readme, readme.index("## Custom ops and kernels"))
    assert match is not None
    (tmp_path / "snippet.py").write_text(match.group(1), encoding="utf-8")
    cmd = [sys.executable, "-W", "error::UserWarning", "snippet.py"]
    proc = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = proc.stdout.strip().splitlines()
    assert lines[0].startswith("[-0.2") and lines[0].endswith("[0.10000000149011612, 1.0]")
