"""The public API snapshot: each public module's ``__all__`` against tests/api_snapshot.json.

A public module is every module or package of the eight distributions whose dotted path has no part
starting with ``_`` (``burn``, ``burn.nn``, ``burn_train.metric``, ...; not ``burn._tensor``). Adding or
removing a public name is then a visible change in review: the test fails until the snapshot is
regenerated on purpose.

To accept the current API after an intended change, regenerate the snapshot and commit it::

    BURN_UPDATE_API_SNAPSHOT=1 python -m pytest tests/test_public_api.py -q

Only names that really resolve are written; a name listed in ``__all__`` that does not resolve fails
``test_every_name_in_all_resolves`` whatever the snapshot says.
"""

from __future__ import annotations

import importlib
import json
import os
import pkgutil
from pathlib import Path

import pytest

SNAPSHOT = Path(__file__).with_name("api_snapshot.json")
TOP_LEVEL = (
    "burn",
    "burn_autodiff",
    "burn_wgpu",
    "burn_cuda",
    "burn_train",
    "burn_metrics_cuda",
    "burn_metrics_web",
    "burn_onnx",
    "burn_remote",
)
UPDATE = os.environ.get("BURN_UPDATE_API_SNAPSHOT", "").strip().lower() in {"1", "true", "yes", "on"}


def _public_modules() -> list[str]:
    """Dotted names of every public module, found from the files (private packages are not entered)."""
    found = []

    def visit(name: str) -> None:
        found.append(name)
        module = importlib.import_module(name)
        for info in pkgutil.iter_modules(getattr(module, "__path__", [])):
            if not info.name.startswith("_") and info.name != "tests":
                visit(f"{name}.{info.name}")

    for top in TOP_LEVEL:
        visit(top)
    return sorted(found)


def _resolves(module: object, name: str) -> bool:
    try:
        getattr(module, name)
    except (AttributeError, ImportError):
        return False
    return True


@pytest.fixture(scope="module")
def modules() -> dict[str, object]:
    return {name: importlib.import_module(name) for name in _public_modules()}


@pytest.fixture(scope="module")
def current(modules: dict[str, object]) -> dict[str, list[str]]:
    """Module -> sorted public names that exist, for every public module with an ``__all__``."""
    return {
        name: sorted(n for n in set(module.__all__) if _resolves(module, n))
        for name, module in modules.items()
        if hasattr(module, "__all__")
    }


def test_public_modules_declare_all(modules: dict[str, object]) -> None:
    missing = [name for name, module in modules.items() if not hasattr(module, "__all__")]
    assert not missing, f"public modules without __all__ (add one, or make the module private): {missing}"


def test_every_name_in_all_resolves(modules: dict[str, object]) -> None:
    problems = []
    for name, module in modules.items():
        names = list(getattr(module, "__all__", []))
        duplicates = sorted({n for n in names if names.count(n) > 1})
        if duplicates:
            problems.append(f"{name}.__all__ lists {duplicates} more than once")
        unresolved = sorted(n for n in set(names) if not _resolves(module, n))
        if unresolved:
            problems.append(f"{name}.__all__ names what does not exist: {unresolved}")
    assert not problems, "\n".join(problems)


def test_api_matches_snapshot(current: dict[str, list[str]]) -> None:
    if UPDATE:
        SNAPSHOT.write_text(json.dumps(current, indent=2, sort_keys=True) + "\n")
    assert SNAPSHOT.exists(), f"{SNAPSHOT.name} is missing; create it with BURN_UPDATE_API_SNAPSHOT=1"
    snapshot = json.loads(SNAPSHOT.read_text())
    diff = []
    for module in sorted(set(snapshot) | set(current)):
        if module not in current:
            diff.append(f"- module {module} (removed, or its __all__ is gone)")
        elif module not in snapshot:
            diff.append(f"+ module {module}: {current[module]}")
        else:
            added = sorted(set(current[module]) - set(snapshot[module]))
            removed = sorted(set(snapshot[module]) - set(current[module]))
            diff += [f"+ {module}.{n}" for n in added] + [f"- {module}.{n}" for n in removed]
    assert not diff, (
        "the public API differs from tests/api_snapshot.json:\n  "
        + "\n  ".join(diff)
        + "\nIf the change is intended: BURN_UPDATE_API_SNAPSHOT=1 python -m pytest tests/test_public_api.py"
    )
