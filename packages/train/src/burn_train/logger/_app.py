"""The application log: ``burn`` and ``burn_train`` log records go to ``<artifacts>/experiment.log``."""

from __future__ import annotations

import logging
import os

LOGGER_NAMES = ("burn", "burn_train")
log = logging.getLogger("burn_train")


class AppLogger:
    """Attaches a file handler to the ``burn`` loggers for the duration of a fit; ``close()`` removes it."""

    def __init__(self, path: str | os.PathLike[str], level: int = logging.INFO) -> None:
        self.path = os.fspath(path)
        os.makedirs(os.path.dirname(self.path) or ".", exist_ok=True)
        self.handler = logging.FileHandler(self.path, encoding="utf-8")
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
