"""Errors of burn.data: malformed files and failures inside the data loader."""

from __future__ import annotations

from .._errors import BurnError


class DatasetError(BurnError, ValueError):
    """A dataset file that cannot be read as declared: the message names the file and what is wrong."""

    def __init__(self, path: object, problem: str) -> None:
        self.path = str(path)
        self.problem = problem
        super().__init__(f"{self.path}: {problem}")


class DataLoaderError(BurnError, RuntimeError):
    """Reading an item or batching failed while iterating a data loader.

    ``index`` is the dataset index of the item that failed (``None`` when the batcher failed),
    ``batch_index`` the position of the batch in the epoch; the original exception is ``__cause__``.
    """

    def __init__(self, message: str, *, index: int | None, batch_index: int) -> None:
        self.index = index
        self.batch_index = batch_index
        super().__init__(message)
