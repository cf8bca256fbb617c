"""CuPy's on-disk cache of compiled kernels, kept beside burn's other caches.

CuPy stores every module NVRTC compiles under ``CUPY_CACHE_DIR`` (default ``~/.cupy/kernel_cache``) and
loads it from there in the next process instead of compiling again. burn-cuda points that variable at
``<burn cache>/cuda-kernels`` (``burn.autotune.cache_dir()``: ``BURN_CACHE_DIR`` or the platform's cache
folder) before CuPy is first imported, so one folder holds a machine's tuning results and compiled
kernels, ``burn autotune status`` lists both, and a fresh ``BURN_CACHE_DIR`` is a cold start for both.
A ``CUPY_CACHE_DIR`` the user set is left as it is. The variable is read by CuPy at each compile and is
inherited by child processes (data-loader workers, launched ranks), which then share the folder.
"""

from __future__ import annotations

import os
from collections.abc import MutableMapping

from burn.autotune import cache_dir

FOLDER = "cuda-kernels"  # under burn's cache folder


def use_burn_kernel_cache(environ: MutableMapping[str, str] | None = None) -> str:
    """Set ``CUPY_CACHE_DIR`` to burn's kernel cache folder unless it is set already; returns the
    folder CuPy will use (``environ``: the process environment unless a test passes another)."""
    env = os.environ if environ is None else environ
    current = env.get("CUPY_CACHE_DIR", "").strip()
    if current:
        return current
    path = str(cache_dir() / FOLDER)
    env["CUPY_CACHE_DIR"] = path
    return path
