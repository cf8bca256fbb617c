"""Shared set-up of burn-onnx's tests: every available backend as a fixture, and helpers importable as
``burn_onnx_tests._util`` (pytest runs with ``--import-mode=importlib``, which puts no test folder on
``sys.path``)."""

from __future__ import annotations

import sys
import types
from pathlib import Path

import burn
import pytest

_HERE = Path(__file__).resolve().parent
if "burn_onnx_tests" not in sys.modules:
    _package = types.ModuleType("burn_onnx_tests", f"test helpers in {_HERE}")
    _package.__path__ = [str(_HERE)]
    sys.modules["burn_onnx_tests"] = _package


def _backend_params() -> list:
    """cpu always; every other registered backend, skipped with its reason where it cannot run."""
    params = []
    for info in burn.backends():
        if info.dist == "(registered in code)":  # test doubles such as burn.testing's core-only backend
            continue
        if info.name == "remote":  # a server's device: burn-remote's tests run the suite through one
            continue
        name = "cpu" if info.name == "ndarray" else info.name
        marks = [] if info.available else [pytest.mark.skip(reason=f"{info.name}: {info.reason}")]
        if info.name != "ndarray":
            marks.append(pytest.mark.gpu)
        params.append(pytest.param(name, marks=marks, id=name))
    return params


BACKENDS = _backend_params()


@pytest.fixture(params=BACKENDS, scope="session")
def device(request: pytest.FixtureRequest) -> burn.Device:
    try:
        return burn.device(request.param)
    except (burn.BurnError, KeyError) as exc:  # a backend that vanished since collection
        pytest.skip(f"{request.param}: {exc}")
