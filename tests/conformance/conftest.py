"""Conformance suite fixtures: ``backend_device`` runs each case on every available backend (plus the
``core-only`` reference backend); ``--burn-backend NAME`` or ``BURN_CONFORMANCE_BACKEND=NAME`` picks
one. ``op_case`` walks the table in ``_specs.py`` (one case per op and dtype)."""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path

import burn
import pytest

_HERE = Path(__file__).parent


def _load(name: str):
    """Import a helper module of this folder by path (pytest runs with --import-mode=importlib)."""
    full = f"burn_conformance.{name}"
    if full not in sys.modules:
        spec = importlib.util.spec_from_file_location(full, _HERE / f"{name}.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules[full] = module
        spec.loader.exec_module(module)
    return sys.modules[full]


_core_only = _load("_core_only")
_specs = _load("_specs")


def pytest_addoption(parser):
    parser.addoption(
        "--burn-backend",
        action="store",
        default=None,
        help="run the conformance suite on this backend only (a name from burn.backends(), or core-only)",
    )


def _selected(config) -> str | None:
    try:
        opt = config.getoption("--burn-backend")
    except ValueError:  # the option is unknown when pytest starts above this folder
        opt = None
    return opt or os.environ.get("BURN_CONFORMANCE_BACKEND") or None


def _ensure_core_only() -> None:
    if "core-only" not in burn.plugins.registry().backends:
        burn.plugins.register_plugin(_core_only, "core-only")


def _backend_names(config) -> list:
    _ensure_core_only()
    infos = {info.name: info for info in burn.backends()}
    chosen = _selected(config)
    if chosen is not None:
        if chosen not in infos:
            raise pytest.UsageError(
                f"--burn-backend {chosen!r}: not a registered backend (known: {sorted(infos)})"
            )
        if not infos[chosen].available:
            return [pytest.param(chosen, marks=pytest.mark.skip(reason=f"{chosen}: {infos[chosen].reason}"))]
        return [chosen]
    # unavailable backends are not parametrized (test_unavailable_backends_give_reasons covers them)
    return [name for name, info in infos.items() if info.available]


def _declared_dtypes(name) -> set[str]:
    _ensure_core_only()
    return {d.name for d in burn.device(name).backend.dtypes}


def pytest_generate_tests(metafunc):
    names = _backend_names(metafunc.config)
    if "backend_name" in metafunc.fixturenames and "op_case" in metafunc.fixturenames:
        # one case per (backend, op, dtype) the backend declares; undeclared dtypes are checked to be
        # clear errors by test_undeclared_dtypes_are_clear_errors instead
        params, ids = [], []
        for name in names:
            if not isinstance(name, str):  # a chosen backend that is unavailable: one skipped case
                params.append(pytest.param(name.values[0], None, marks=name.marks))
                ids.append(str(name.values[0]))
                continue
            declared = _declared_dtypes(name)
            for spec in _specs.SPECS:
                for dt in spec.dtypes:
                    if dt in declared:
                        params.append((name, (spec, dt)))
                        ids.append(f"{name}-{spec.name}-{dt}")
        metafunc.parametrize(("backend_name", "op_case"), params, ids=ids, scope="session")
    elif "backend_name" in metafunc.fixturenames:
        metafunc.parametrize("backend_name", names, scope="session")


@pytest.fixture(scope="session")
def backend_device(backend_name):
    """The device under test (``burn.device(name)``)."""
    _ensure_core_only()
    return burn.device(backend_name)


@pytest.fixture(scope="session")
def reference_device():
    """The numpy backend every result is compared with."""
    return burn.device("cpu")


@pytest.fixture(scope="session")
def specs():
    return _specs
