"""A machine without a C compiler: ``CC`` names a missing binary and ``PATH`` holds no compiler, so burn's
compiled cpu kernels (``burn._native``) are off and everything runs on numpy. In such a process,
``burn info`` says why, and the tests of the paths that compile elsewhere (the compiled-kernel tests'
fall-backs, burn-onnx's element-wise chains) pass on numpy alone.

CI also runs the cpu tests a second time with ``BURN_CPU_NATIVE=0`` (``.ci/run``); this test covers the
other way to get there, a compiler that is not found."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
# the tests of the compiled kernels and of what calls them: each runs its numpy side in the child (the
# rest of the cpu tests run on numpy alone in CI's second pass)
COVERED = ["packages/core/tests/test_cpu_native.py", "packages/onnx/tests/test_chains.py"]


def _no_compiler_env(tmp_path: Path) -> dict[str, str]:
    empty = tmp_path / "bin"
    empty.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("BURN_CPU_NATIVE", "BURN_CPU_NATIVE_AFTER")}
    # a fresh kernel cache: nothing compiled earlier can be loaded
    env.update(CC="/nonexistent/cc", PATH=str(empty), BURN_CACHE_DIR=str(tmp_path / "cache"))
    return env


def test_burn_info_says_why_kernels_are_not_compiled(tmp_path: Path) -> None:
    code = "import json, burn._native as n; print(json.dumps(n.describe()))"
    out = subprocess.run(
        [sys.executable, "-c", code],
        env=_no_compiler_env(tmp_path),
        capture_output=True,
        text=True,
        check=True,
    )
    info = json.loads(out.stdout)
    assert info["native"] is False and "not an executable" in info["reason"], info


@pytest.mark.slow
def test_the_numpy_path_passes_without_a_compiler(tmp_path: Path) -> None:
    cmd = [sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider", "-m", "not gpu", *COVERED]
    done = subprocess.run(cmd, cwd=ROOT, env=_no_compiler_env(tmp_path), capture_output=True, text=True)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert " passed" in done.stdout
