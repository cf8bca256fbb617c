"""burn's conformance suite and burn-autodiff's gradchecks on the remote device (a cpu server): the
same pytest commands a backend author runs, pointed at the server through ``BURN_REMOTE_URL``."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]


def _pytest(server, *args: str) -> tuple[int, str]:
    env = dict(os.environ, BURN_REMOTE_URL=server.url, BURN_REMOTE_TOKEN=server.token)
    env.pop("BURN_CONFORMANCE_BACKEND", None)
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        timeout=500,
    )
    return proc.returncode, proc.stdout + proc.stderr


def _passed(out: str) -> int:
    found = re.search(r"(\d+) passed", out)
    return int(found.group(1)) if found else 0


# The rows of test-defined burn.custom ops are left out here: a custom op runs on a server only where the
# server's process registered it too (a plugin), and this server has no such plugin. A server that has
# one, and the clear error for an op the server lacks, are tested in test_custom_ops.py.
_NOT_CUSTOM = "not custom"


def test_conformance_suite_passes_on_remote(server):
    rc, out = _pytest(server, "--pyargs", "burn.testing", "--burn-backend", "remote", "-k", _NOT_CUSTOM)
    assert rc == 0, out[-4000:]
    assert _passed(out) > 1500 and " skipped" not in out.splitlines()[-1], out[-500:]


def test_autodiff_gradchecks_pass_on_remote(server):
    # every rule's float64 finite-difference check, without checkpointing (the rules are the same with it)
    test_file = str(ROOT / "packages/autodiff/tests/test_gradcheck.py")
    rc, out = _pytest(server, test_file, "-k", f"remote and not balanced and {_NOT_CUSTOM}")
    assert rc == 0, out[-4000:]
    assert _passed(out) > 100, out[-500:]
