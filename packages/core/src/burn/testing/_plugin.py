"""The conformance suite's pytest plugin: entry point ``burn = "burn.testing._plugin"`` in group
``pytest11``, so pytest loads it in every run where burn-core is installed.

It adds the ``--burn-backend`` option and the ``burn_*`` fixtures below, nothing else: a test that asks
for none of them runs exactly as without the plugin, and burn's backends load only when the first test
that does is collected (this module imports pytest alone).

- ``burn_backend_name``: a backend under test. A test using it (directly or through ``burn_device``)
  runs once per backend: every backend ``burn.backends()`` lists as available plus ``core-only``
  (``burn.testing.CoreOnlyBackend``), or only the one named by ``--burn-backend NAME`` (or
  ``BURN_CONFORMANCE_BACKEND=NAME``; an unavailable one gives one test skipped with its reason).
- ``burn_op_case``: ``(OpSpec, dtype name)``; a test using it runs once per backend, row of
  ``burn.testing.SPECS`` and dtype of the row that the backend declares in ``Backend.dtypes``.
- ``burn_device``: the device under test, ``burn.device(burn_backend_name)``.
- ``burn_reference_device``: the numpy backend's device, which every result is compared with.
"""

from __future__ import annotations

import os
from typing import Any

import pytest

ENV = "BURN_CONFORMANCE_BACKEND"
CORE_ONLY = "core-only"
_BACKENDS = pytest.StashKey[list]()


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("burn", "burn conformance suite (pytest --pyargs burn.testing)")
    group.addoption(
        "--burn-backend",
        action="store",
        default=None,
        metavar="NAME",
        help=f"run the burn conformance suite on this backend only: a name from burn.backends() or "
        f"{CORE_ONLY} (default: ${ENV}, else every available backend and {CORE_ONLY})",
    )


def _ensure_core_only() -> None:
    import burn

    if CORE_ONLY not in burn.plugins.registry().backends:
        from burn.testing import _core_only

        burn.plugins.register_plugin(_core_only, CORE_ONLY)


def _backends_under_test(config: pytest.Config) -> list[Any]:
    """Backend names (or one skipped ``pytest.param`` for a chosen backend that cannot run here)."""
    if _BACKENDS in config.stash:
        return config.stash[_BACKENDS]
    import burn

    _ensure_core_only()
    infos = {info.name: info for info in burn.backends()}
    option = config.getoption("burn_backend")
    chosen = option or os.environ.get(ENV, "").strip() or None
    source = "--burn-backend" if option else ENV
    if chosen is None:
        # unavailable backends are not parametrized (test_unavailable_backends_give_reasons covers them)
        names: list[Any] = [name for name, info in infos.items() if info.available]
    elif _base_name(chosen) not in infos:  # "wgpu+fusion": a backend with decorators
        raise pytest.UsageError(f"{source} {chosen!r}: not a registered backend (known: {sorted(infos)})")
    elif not infos[_base_name(chosen)].available:
        reason = infos[_base_name(chosen)].reason
        names = [pytest.param(chosen, marks=pytest.mark.skip(reason=f"{chosen}: {reason}"))]
    else:
        names = [chosen]
    config.stash[_BACKENDS] = names
    return names


def _base_name(chosen: str) -> str:
    """The registered backend name of a device spec such as ``cpu+fusion`` (aliases resolved)."""
    import burn

    base = chosen.partition("+")[0].partition(":")[0]
    try:
        return str(burn.plugins.registry().backend(base).name)
    except KeyError:
        return base


def _op_cases(names: list[Any]) -> tuple[list[Any], list[str]]:
    """One ``(backend, (spec, dtype))`` per row and dtype the backend declares. Undeclared dtypes are
    checked to be clear errors by ``test_undeclared_dtypes_are_clear_errors`` instead."""
    import burn
    from burn.testing._specs import SPECS

    params: list[Any] = []
    ids: list[str] = []
    for name in names:
        if not isinstance(name, str):  # a chosen backend that is unavailable: one skipped case
            params.append(pytest.param(name.values[0], None, marks=name.marks))
            ids.append(str(name.values[0]))
            continue
        declared = {d.name for d in burn.device(name).backend.dtypes}
        for spec in SPECS:
            for dt in spec.dtypes:
                if dt in declared:
                    params.append((name, (spec, dt)))
                    ids.append(f"{name}-{spec.name}-{dt}")
    return params, ids


def pytest_sessionstart(session: pytest.Session) -> None:
    if session.config.getoption("burn_backend"):  # a mistyped name is one usage error, up front
        _backends_under_test(session.config)


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "burn_backend_name" not in metafunc.fixturenames:
        return  # not a test of the suite: left alone
    names = _backends_under_test(metafunc.config)
    if "burn_op_case" in metafunc.fixturenames:
        params, ids = _op_cases(names)
        metafunc.parametrize(
            ("burn_backend_name", "burn_op_case"), params, ids=ids, indirect=True, scope="session"
        )
    else:
        metafunc.parametrize("burn_backend_name", names, indirect=True, scope="session")


@pytest.fixture(scope="session")
def burn_backend_name(request: pytest.FixtureRequest) -> str:
    """The name of the backend under test (one per backend: see ``--burn-backend``)."""
    return request.param


@pytest.fixture(scope="session")
def burn_op_case(request: pytest.FixtureRequest, burn_backend_name: str) -> tuple[Any, str]:
    """``(OpSpec, dtype name)``: one row of ``burn.testing.SPECS`` for one dtype the backend declares."""
    return request.param


@pytest.fixture(scope="session")
def burn_device(burn_backend_name: str) -> Any:
    """The device under test, ``burn.device(burn_backend_name)``."""
    import burn

    _ensure_core_only()
    return burn.device(burn_backend_name)


@pytest.fixture(scope="session")
def burn_reference_device() -> Any:
    """The numpy backend's device, the reference every result is compared with."""
    import burn

    return burn.device("cpu")
