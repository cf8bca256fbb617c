"""Set-up for every test session in this repository: autotune results go to a temporary cache folder,
so tests neither read the user's tuned kernels nor leave theirs behind (tests that check the cache set
their own ``BURN_CACHE_DIR``), and tuning queued in the background by one test never runs in another."""

from __future__ import annotations

import os
import sys
import tempfile

import pytest

os.environ.setdefault("BURN_CACHE_DIR", tempfile.mkdtemp(prefix="burn-test-cache-"))


@pytest.fixture(autouse=True)
def _no_tuning_left_over():
    """Drop the tuning jobs a test queued and left (``burn.autotune.tune_pending`` never ran them)."""
    yield
    background = sys.modules.get("burn.autotune._background")
    if background is not None:
        background.discard()
