"""Setup shared by the core tests: helper modules are importable by package name.

pytest runs with ``--import-mode=importlib``, which puts no test folder on ``sys.path``. So this
conftest registers the package name ``burn_core_tests`` over this folder (e.g.
``burn_core_tests._module_ref``).
"""

from __future__ import annotations

import sys
import types
from pathlib import Path

import pytest
from burn import plugins
from burn.plugins import _manager

_HERE = Path(__file__).resolve().parent

if "burn_core_tests" not in sys.modules:
    _package = types.ModuleType("burn_core_tests", f"test helpers in {_HERE}")
    _package.__path__ = [str(_HERE)]
    sys.modules["burn_core_tests"] = _package


@pytest.fixture
def clean(monkeypatch):
    """The plugin registry reloaded from the installed entry points, and again after the test (which
    may register plugins from code)."""
    monkeypatch.delenv("BURN_DISABLE_PLUGINS", raising=False)
    monkeypatch.delenv("BURN_DISABLE_PLUGIN_AUTOLOAD", raising=False)
    plugins.reload()
    yield monkeypatch
    _manager._extra.clear()
    plugins.reload()
