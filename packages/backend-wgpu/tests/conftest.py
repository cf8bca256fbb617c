"""Fixtures of the wgpu backend tests: every test here needs a WebGPU adapter and skips cleanly, with
the availability reason, where there is none."""

from __future__ import annotations

import os
import sys
import types
from pathlib import Path

import pytest

os.environ.setdefault("XDG_RUNTIME_DIR", "/tmp")  # silences Mesa's warning on headless CI

import burn

# the helper modules of this folder (_browser, _web_models) as ``burn_wgpu_tests.<name>``: pytest runs
# with --import-mode=importlib, which puts no test folder on sys.path
if "burn_wgpu_tests" not in sys.modules:
    _package = types.ModuleType("burn_wgpu_tests", "test helpers of burn-wgpu")
    _package.__path__ = [str(Path(__file__).resolve().parent)]
    sys.modules["burn_wgpu_tests"] = _package


def _availability() -> tuple[bool, str]:
    for info in burn.backends():
        if info.name == "wgpu":
            return info.available, info.reason
    return False, "the wgpu backend is not registered (pip install burn-wgpu)"


@pytest.fixture(scope="session")
def dev():
    ok, reason = _availability()
    if not ok:
        pytest.skip(f"wgpu unavailable: {reason}")
    return burn.device("wgpu")


@pytest.fixture(scope="session")
def raw_dev(dev):
    """The same adapter without the fusion decorator: the executor sees every op as its own kernel."""
    return burn.device(dev, fusion=False)


@pytest.fixture(scope="session")
def backend(dev):
    """The WgpuBackend itself (under the fusion decorator the device runs by default)."""
    b = dev.backend
    return getattr(b, "inner", b)


@pytest.fixture
def rng():
    import numpy as np

    return np.random.default_rng(1234)
