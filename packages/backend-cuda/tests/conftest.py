"""Fixtures for the CUDA backend tests: each GPU test skips cleanly, with the backend's own reason,
where CuPy or a GPU is missing."""

from __future__ import annotations

import pytest


def cuda_reason() -> str:
    from burn_cuda import _probe

    ok, reason = _probe.is_available()
    return "" if ok else reason


@pytest.fixture(scope="session")
def cuda():
    """The ``cuda:0`` device (skips with the availability reason where CUDA is unavailable)."""
    reason = cuda_reason()
    if reason:
        pytest.skip(f"CUDA backend unavailable: {reason}")
    import burn

    return burn.device("cuda:0")


@pytest.fixture(scope="session")
def cpu():
    import burn

    return burn.device("cpu")
