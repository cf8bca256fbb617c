"""mypy over every package's source (packages/*/src), as a test so that CI enforces it (STYLE.md: types on
the public surface, checks in CI). The configuration is ``[tool.mypy]`` in the root pyproject.toml
(annotated defs everywhere, ``check_untyped_defs``, unused ignores reported); the mypy version is pinned
in requirements-dev.txt. The incremental cache (``.mypy_cache``) makes a warm run take a few seconds."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_mypy_is_clean():
    if importlib.util.find_spec("mypy") is None:
        pytest.fail("mypy is not installed: pip install -r requirements-dev.txt")
    result = subprocess.run(
        [sys.executable, "-m", "mypy"], cwd=ROOT, capture_output=True, text=True, timeout=600
    )
    assert result.returncode == 0, (
        "mypy (see [tool.mypy] in pyproject.toml):\n" + result.stdout + result.stderr
    )
