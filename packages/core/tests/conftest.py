"""Setup shared by the core tests: helper modules are importable by package name.

pytest runs with ``--import-mode=importlib``, which puts no test folder on ``sys.path``. So this
conftest registers two package names over folders of helpers: ``burn_core_tests`` (this folder; e.g.
``burn_core_tests._module_ref``) and ``burn_conformance`` (``tests/conformance``, the name its own
conftest loads modules under, so both suites share one ``CoreOnlyBackend`` class).
"""

from __future__ import annotations

import sys
import types
from pathlib import Path

_HERE = Path(__file__).resolve().parent
_FOLDERS = {"burn_core_tests": _HERE, "burn_conformance": _HERE.parents[2] / "tests" / "conformance"}

for _name, _folder in _FOLDERS.items():
    if _name not in sys.modules:
        _package = types.ModuleType(_name, f"test helpers in {_folder}")
        _package.__path__ = [str(_folder)]
        sys.modules[_name] = _package
