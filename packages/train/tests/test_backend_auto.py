"""``--backend auto`` says what it picked and why not the backends ranked above it (issue 32): on a
machine whose only GPU adapter is a software rasteriser (lavapipe, llvmpipe) auto trains on cpu, and the
run says that wgpu was skipped as slower than cpu instead of leaving the user to guess."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import burn.plugins

ROOT = Path(__file__).resolve().parents[3]


def test_backend_auto_names_its_choice_and_the_backends_it_skipped(tmp_path):
    cmd = [sys.executable, str(ROOT / "examples" / "train_digits.py"), "--backend", "auto", "--epochs", "1"]
    cmd += ["--limit", "32", "--renderer", "cli", "--no-plots", "--artifacts", str(tmp_path / "art")]
    out = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    started = re.match(r"\[start\] training on (\S+) ", lines[1])
    assert lines[0].startswith("--backend auto: ") and started, lines[:2]
    device = started.group(1)
    assert lines[0].split()[2] == device  # the same device as the start line
    specs = burn.plugins.registry().backends.values()
    chosen = next(s for s in specs if device.split(":")[0] in (s.name, *s.aliases))
    for spec in specs:
        if spec.priority > chosen.priority:  # ranked above: skipped, with the reason it gives
            ok, why = (spec.auto_available or spec.is_available)()
            assert not ok and f"{spec.name}: {why}" in lines[0], (spec.name, lines[0])
