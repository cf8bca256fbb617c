"""A resume on another device than the run trained on says so and is recorded (issue 32): run.json
keeps each resume (epoch, start, device, command), so a summary that spans both is never silently
mixed."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
TRAIN = [sys.executable, str(ROOT / "examples" / "train_digits.py"), "--limit", "64", "--renderer", "cli"]


def test_a_resume_on_another_device_is_said_and_recorded(tmp_path):
    art = str(tmp_path / "art")
    first = subprocess.run(
        [*TRAIN, "--no-plots", "--epochs", "1", "--artifacts", art], capture_output=True, text=True
    )
    assert first.returncode == 0, first.stderr
    run = json.loads((tmp_path / "art" / "run.json").read_text())
    assert run["device"] == "cpu (numpy), float32" and "resumes" not in run

    cmd = [
        *TRAIN,
        "--no-plots",
        "--devices",
        "cpu,cpu:1",
        "--epochs",
        "2",
        "--resume",
        "1",
        "--artifacts",
        art,
    ]
    second = subprocess.run(cmd, capture_output=True, text=True)
    assert second.returncode == 0, second.stderr
    now = "cpu (numpy), cpu:1 (numpy), float32"
    assert (
        f"resuming run {run['run_id']} from epoch 1: it ran on cpu (numpy), float32; the epochs from 2 run on {now}"
        in (second.stdout.splitlines())
    )
    after = json.loads((tmp_path / "art" / "run.json").read_text())
    assert {k: after[k] for k in run} == run  # the run's own record is kept
    assert [(r["from_epoch"], r["device"]) for r in after["resumes"]] == [(1, now)]

    # the same device again: recorded, nothing said
    cmd[cmd.index("--epochs") + 1], cmd[cmd.index("--resume") + 1] = "3", "2"
    third = subprocess.run(cmd, capture_output=True, text=True)
    assert third.returncode == 0, third.stderr
    assert not [line for line in third.stdout.splitlines() if line.startswith("resuming run")]
    resumes = json.loads((tmp_path / "art" / "run.json").read_text())["resumes"]
    assert [(r["from_epoch"], r["device"]) for r in resumes] == [(1, now), (2, now)]
