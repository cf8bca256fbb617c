"""The persistent autotune cache: one JSON file per device fingerprint under ``BURN_CACHE_DIR``.

A file maps tuning keys to the winning candidate (with the figures that chose it). It is written
atomically (a temporary file, then ``os.replace``) under an advisory lock, re-read and merged before
each write, so two processes tuning at once both keep their results. A file that cannot be parsed is a
warning and an empty cache (the keys are tuned again and the file rewritten), never a crash.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import sys
import tempfile
import threading
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

FORMAT = 1


def cache_dir() -> Path:
    """``BURN_CACHE_DIR``, else the platform's user cache folder for burn (``~/.cache/burn`` on Linux,
    ``~/Library/Caches/burn`` on macOS, ``%LOCALAPPDATA%\\burn\\cache`` on Windows)."""
    env = os.environ.get("BURN_CACHE_DIR", "").strip()
    if env:
        return Path(env).expanduser()
    home = Path.home()
    if sys.platform == "win32":
        return Path(os.environ.get("LOCALAPPDATA", home / "AppData" / "Local")) / "burn" / "cache"
    if sys.platform == "darwin":
        return home / "Library" / "Caches" / "burn"
    return Path(os.environ.get("XDG_CACHE_HOME", "") or home / ".cache") / "burn"


def autotune_dir() -> Path:
    return cache_dir() / "autotune"


def cache_file(fingerprint: str) -> Path:
    """The file of one device fingerprint (a readable prefix plus a hash of the whole string)."""
    digest = hashlib.sha256(fingerprint.encode()).hexdigest()[:16]
    safe = "".join(c if c.isalnum() else "-" for c in fingerprint.split("|")[0])[:40]
    return autotune_dir() / f"{safe}-{digest}.json"


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    """An exclusive advisory lock on ``path``.lock (fcntl where it exists; elsewhere the atomic replace
    alone keeps the file whole, and a concurrent writer's entries may be lost until re-tuned)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        import fcntl
    except ImportError:  # Windows, Pyodide
        yield
        return
    with open(path.with_suffix(".lock"), "a+") as fh:
        fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh.fileno(), fcntl.LOCK_UN)


class TuneCache:
    """The tuned choices of one device: ``get(key)``, ``put(key, entry)``; ``entries()`` lists them."""

    def __init__(self, fingerprint: str, persistent: bool = True) -> None:
        self.fingerprint = fingerprint
        self.path = cache_file(fingerprint)
        self.persistent = persistent
        self._lock = threading.Lock()
        self._entries: dict[str, dict[str, Any]] = self._read() if persistent else {}

    def _read(self) -> dict[str, dict[str, Any]]:
        try:
            text = self.path.read_text()
        except FileNotFoundError:
            return {}
        except OSError as exc:
            warnings.warn(
                f"burn.autotune: cannot read the cache {self.path}: {exc}", RuntimeWarning, stacklevel=3
            )
            return {}
        try:
            data = json.loads(text)
            if data.get("format") != FORMAT or data.get("fingerprint") != self.fingerprint:
                return {}  # another format or device: tuned again, then overwritten
            entries = data["entries"]
            if not isinstance(entries, dict) or not all(isinstance(v, dict) for v in entries.values()):
                raise ValueError("entries must map keys to objects")
            return entries
        except (ValueError, KeyError, AttributeError, TypeError) as exc:
            warnings.warn(
                f"burn.autotune: the cache {self.path} is corrupt ({type(exc).__name__}: {exc}); "
                "its kernels are tuned again and the file rewritten",
                RuntimeWarning,
                stacklevel=3,
            )
            return {}

    def get(self, key: str) -> dict[str, Any] | None:
        return self._entries.get(key)

    def entries(self) -> dict[str, dict[str, Any]]:
        return dict(self._entries)

    def put(self, key: str, entry: dict[str, Any]) -> None:
        """Record ``entry`` for ``key`` and persist it (merged with what other processes wrote)."""
        with self._lock:
            self._entries[key] = entry
            if not self.persistent:
                return
            try:
                with _locked(self.path):
                    merged = {**self._read(), key: entry}
                    self._entries = {**merged, **self._entries}
                    _write_atomic(
                        self.path, {"format": FORMAT, "fingerprint": self.fingerprint, "entries": merged}
                    )
            except OSError as exc:  # a read-only cache folder: keep tuning results in memory
                warnings.warn(
                    f"burn.autotune: cannot write the cache {self.path}: {exc}", RuntimeWarning, stacklevel=2
                )
                self.persistent = False


def _write_atomic(path: Path, data: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=path.name, suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w") as fh:
            json.dump(data, fh, indent=1, sort_keys=True)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def list_caches() -> list[dict[str, Any]]:
    """Every cache file under the autotune folder: path, fingerprint, entries (unreadable: error)."""
    out = []
    folder = autotune_dir()
    for path in sorted(folder.glob("*.json")) if folder.is_dir() else []:
        try:
            data = json.loads(path.read_text())
            entries = data.get("entries", {}) if isinstance(data, dict) else None
            if not isinstance(entries, dict) or not all(isinstance(v, dict) for v in entries.values()):
                raise ValueError(
                    "not an autotune cache: expected an object whose 'entries' map keys to objects"
                )
            out.append(
                {"path": str(path), "fingerprint": str(data.get("fingerprint", "?")), "entries": entries}
            )
        except (OSError, ValueError) as exc:  # listed with the reason; tuning rewrites the file
            reason = f"not JSON ({exc})" if isinstance(exc, json.JSONDecodeError) else str(exc)
            out.append({"path": str(path), "fingerprint": "?", "entries": {}, "error": reason})
    return out


def clear_caches() -> int:
    """Delete every autotune cache file; returns how many were removed."""
    folder = autotune_dir()
    removed = 0
    for path in list(folder.glob("*.json")) + list(folder.glob("*.lock")) if folder.is_dir() else []:
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
            removed += path.suffix == ".json"
    return removed
