"""The README tells the truth: its "Training, in short" block runs as written (in a fresh folder, with
burn's own warnings as errors), its package table lists every distribution of ``packages/*``, its extras
table every extra of burn-core, and what ``dev.py test`` installs is said."""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")


def _block_after(marker: str) -> str:
    start = README.index(marker)
    match = re.compile(r"```python\n(.*?)```", re.S).search(README, start)
    assert match is not None, f"no python block after {marker!r}"
    return match.group(1)


def test_training_in_short_runs_as_written(tmp_path):
    code = _block_after("Training, in short")
    (tmp_path / "snippet.py").write_text(code, encoding="utf-8")
    proc = subprocess.run(
        [sys.executable, "-W", "error::UserWarning", "snippet.py"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    checkpoints = list((tmp_path / "artifacts" / "readme" / "checkpoint").iterdir())
    assert checkpoints, "the learner wrote no checkpoint"
    assert (tmp_path / "artifacts" / "readme" / "experiment.log").exists()


def test_tables_name_every_distribution_and_extra():
    dists = sorted(
        tomllib.loads(p.read_text())["project"]["name"] for p in ROOT.glob("packages/*/pyproject.toml")
    )
    assert len(dists) == 9
    for dist in dists:
        assert f"| `{dist}` |" in README, f"{dist} is missing from the README's package table"
    extras = tomllib.loads((ROOT / "packages/core/pyproject.toml").read_text())["project"][
        "optional-dependencies"
    ]
    for extra in extras:
        assert re.search(rf"\| `{extra}`( / `[a-z-]+`)? \|", README) or f"`{extra}` |" in README, extra
    assert "seven distributions" not in README and "nine distributions" in README
    # the `all` row names exactly the extras `all` leaves out
    in_all = set(extras["all"])
    left_out = sorted(e for e, deps in extras.items() if e != "all" and not set(deps) <= in_all)
    row = re.search(r"^\| `all` \| (.*?) \|", README, re.M)
    assert row is not None
    assert row.group(1) == "every extra above except " + ", ".join(f"`{e}`" for e in left_out), row.group(1)


def test_what_dev_py_test_installs_is_said():
    dev_py = (ROOT / "dev.py").read_text()
    for package in ("mesa-vulkan-drivers", "chromium-headless-shell"):
        assert package in dev_py and package in README
    assert "--enable-unsafe-webgpu" in README and "--use-webgpu-adapter=swiftshader" in README
