"""Atomic file writes: write a temporary file in the same folder, fsync it, then rename over the target.

A crash at any point leaves either the previous file or the new one, never a torn mix; a stale
temporary file from a killed process is ignored by readers and removed by ``remove_stale_temps``.
"""

from __future__ import annotations

import os
import tempfile
from typing import IO

TEMP_SUFFIX = ".tmp"
_CHUNK = 1 << 20


def _write_all(handle: IO[bytes], data: bytes) -> None:
    """Write ``data`` in chunks (a separate function so tests can crash it half way)."""
    view = memoryview(data)
    for start in range(0, len(view), _CHUNK):
        handle.write(view[start : start + _CHUNK])


def _fsync_dir(folder: str) -> None:
    if os.name != "posix":
        return
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def atomic_write(path: str | os.PathLike[str], data: bytes) -> str:
    """Write ``data`` to ``path`` atomically; returns the path. On any error the old file stays."""
    path = os.fspath(path)
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise TypeError(f"atomic_write: data must be bytes, got {type(data).__name__}")
    folder = os.path.dirname(os.path.abspath(path))
    os.makedirs(folder, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{os.path.basename(path)}.", suffix=TEMP_SUFFIX, dir=folder)
    try:
        with os.fdopen(fd, "wb") as handle:
            _write_all(handle, bytes(data))
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    _fsync_dir(folder)
    return path


def remove_stale_temps(folder: str | os.PathLike[str]) -> list[str]:
    """Delete temporary files left by writes that never finished (a killed process); returns them."""
    folder = os.fspath(folder)
    removed: list[str] = []
    if not os.path.isdir(folder):
        return removed
    for name in os.listdir(folder):
        if name.startswith(".") and name.endswith(TEMP_SUFFIX):
            try:
                os.unlink(os.path.join(folder, name))
                removed.append(name)
            except OSError:
                pass
    return removed
