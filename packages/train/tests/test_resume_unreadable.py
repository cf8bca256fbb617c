"""``--resume N`` over files that cannot be read (issue 32): one line on stderr naming the file, exit 2,
before anything is built or written; it was a traceback (exit 1) for a garbage model or optimizer file
or epochs.csv, and a garbage run.json was silently replaced."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
TRAIN = [sys.executable, str(ROOT / "examples" / "train_digits.py"), "--limit", "64", "--renderer", "none"]


@pytest.fixture(scope="module")
def finished(tmp_path_factory) -> Path:
    """A 2-epoch run whose folder each case copies and damages."""
    art = tmp_path_factory.mktemp("run") / "art"
    done = subprocess.run(
        [*TRAIN, "--no-plots", "--epochs", "2", "--artifacts", str(art)], capture_output=True
    )
    assert done.returncode == 0, done.stderr
    return art


def _truncate(path: Path) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


DAMAGE = {
    "checkpoint/model-2.safetensors": lambda p: p.write_bytes(b"junk"),
    "checkpoint/optim-2.npz": lambda p: p.write_text("junk"),
    "checkpoint/scheduler-2.npz": lambda p: p.write_bytes(b"PK\x03\x04 not a zip"),
    "checkpoint/model-2.safetensors ": _truncate,  # (trailing space: a second case of the same file)
    "checkpoint/optim-2.npz ": lambda p: p.unlink(),
    "train/epochs.csv": lambda p: p.write_text("epoch,metric,value\n1,Loss,abc\n"),
    "run.json": lambda p: p.write_text("{not json"),
}


@pytest.mark.parametrize("name", list(DAMAGE))
def test_resume_over_an_unreadable_file_is_one_line_naming_it(tmp_path, finished, name):
    art = tmp_path / "art"
    shutil.copytree(finished, art)
    DAMAGE[name](art / name.strip())
    before = sorted((p.relative_to(art).as_posix(), p.stat().st_mtime_ns) for p in art.rglob("*"))
    out = subprocess.run(
        [*TRAIN, "--epochs", "3", "--resume", "2", "--artifacts", str(art)], capture_output=True, text=True
    )
    lines = [line for line in out.stderr.splitlines() if line.strip()]
    assert out.returncode == 2 and len(lines) == 1, out.stderr
    assert str(art / name.strip()) in lines[0] and "Traceback" not in out.stderr, lines[0]
    assert sorted((p.relative_to(art).as_posix(), p.stat().st_mtime_ns) for p in art.rglob("*")) == before
