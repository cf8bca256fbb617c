"""The command an interrupted digits run prints is exact (issue 32): it repeats the run's own options
(a resume without ``--limit 160`` would train on every item, without ``--batch-size`` on other batches),
and running it continues the same run where it stopped, each epoch once in epochs.csv."""

from __future__ import annotations

import csv
import json
import re
import shlex
import signal
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
SCRIPT = ROOT / "examples" / "train_digits.py"
OPTIONS = [
    "--batch-size",
    "16",
    "--lr",
    "0.02",
    "--seed",
    "3",
    "--renderer",
    "cli",
    "--limit",
    "160",
    "--no-plots",
]


def _epochs_in_csv(path: Path) -> list[int]:
    with open(path, newline="") as handle:
        return [int(row["epoch"]) for row in csv.DictReader(handle) if row["metric"] == "Loss"]


@pytest.mark.skipif(sys.platform == "win32", reason="SIGINT to a child process is POSIX")
def test_the_printed_resume_command_continues_the_same_run(tmp_path):
    art = tmp_path / "run one"  # a space: the command must quote it
    cmd = [sys.executable, str(SCRIPT), *OPTIONS, "--epochs", "40", "--artifacts", str(art)]
    proc = subprocess.Popen(cmd, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    for line in proc.stdout:  # interrupt once epoch 3 is under way
        if line.startswith("[train] epoch 3/40 iter"):
            proc.send_signal(signal.SIGINT)
            break
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    found = re.search(r"continue with `(.+)`$", err.strip().splitlines()[-1])
    assert found, err
    words = shlex.split(found.group(1))
    assert words[:2] == ["python", str(SCRIPT)]  # how it was started
    done = json.loads((art / "summary.json").read_text())["completed_epochs"]
    assert words[2:] == [*OPTIONS, "--artifacts", str(art), "--resume", str(done), "--epochs", "40"]

    words[0], words[-1] = sys.executable, str(done + 1)  # one more epoch is enough to check
    resumed = subprocess.run(words, cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert resumed.returncode == 0, resumed.stderr
    assert f"[train] epoch {done + 1}/{done + 1} iter 10 160/160 (100.0%)" in resumed.stdout  # 16 x 10
    assert _epochs_in_csv(art / "train" / "epochs.csv") == list(range(1, done + 2))
