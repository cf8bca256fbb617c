"""The application log: ``burn`` and ``burn_train`` log records go to ``<artifacts>/experiment.log``.

Runs append to the same file; each starts with a separator line naming its start time and command
line, so one run's records are easy to find.
"""

from __future__ import annotations

import logging
import os
import shlex
import sys
import time

LOGGER_NAMES = ("burn", "burn_train")
log = logging.getLogger("burn_train")


def run_separator(details: str = "") -> str:
    """``===== run started 2026-01-31 12:00:00 (pid 42): python train.py --epochs 3 =====``."""
    command = shlex.join([os.path.basename(sys.executable), *sys.argv]) if sys.argv else ""
    stamp = time.strftime("%Y-%m-%d %H:%M:%S")
    text = f"run started {stamp} (pid {os.getpid()})" + (f": {command}" if command else "")
    if details:
        text += f" [{details}]"
    return f"===== {text} ====="


class AppLogger:
    """Attaches a file handler to the ``burn`` loggers for the duration of a fit; ``close()`` removes it.

    ``header`` (a run separator by default, ``None`` for none) is written first, on its own line."""

    def __init__(
        self, path: str | os.PathLike[str], level: int = logging.INFO, header: str | None = ""
    ) -> None:
        self.path = os.fspath(path)
        os.makedirs(os.path.dirname(self.path) or ".", exist_ok=True)
        self.handler = logging.FileHandler(self.path, encoding="utf-8")
        if header is not None:
            stream = self.handler.stream  # opened by FileHandler's constructor (delay=False)
            assert stream is not None
            blank = "\n" if stream.tell() > 0 else ""
            stream.write(f"{blank}{header or run_separator()}\n")
            self.handler.flush()
        self.handler.setLevel(level)
        self.handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
        self._levels = {}
        for name in LOGGER_NAMES:
            logger = logging.getLogger(name)
            self._levels[name] = logger.level
            if logger.level == logging.NOTSET or logger.level > level:
                logger.setLevel(level)
            logger.addHandler(self.handler)

    def close(self) -> None:
        for name in LOGGER_NAMES:
            logger = logging.getLogger(name)
            logger.removeHandler(self.handler)
            logger.setLevel(self._levels.get(name, logging.NOTSET))
        self.handler.close()
