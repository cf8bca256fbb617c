"""Set-up for every test session in this repository: autotune results go to a temporary cache folder,
so tests neither read the user's tuned kernels nor leave theirs behind (tests that check the cache set
their own ``BURN_CACHE_DIR``)."""

from __future__ import annotations

import os
import tempfile

os.environ.setdefault("BURN_CACHE_DIR", tempfile.mkdtemp(prefix="burn-test-cache-"))
