"""Errors of burn.data: malformed files and failures inside the data loader."""

from __future__ import annotations

from .._errors import BurnError


class DatasetError(BurnError, ValueError):
    """A dataset file that cannot be read as declared: the message names the file and what is wrong.

    >>> import os, tempfile
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     path = os.path.join(tmp, "rows.csv")
    ...     with open(path, "w") as fh:
    ...         _ = fh.write("x,label\\n1.5,0\\nabc,1\\n")
    ...     try:
    ...         burn.data.InMemDataset.from_csv(path, types={"x": float, "label": int})
    ...     except burn.data.DatasetError as exc:
    ...         print(exc.problem)
    line 3, column 'x': cannot convert 'abc' with float: could not convert string to float: 'abc'
    """

    def __init__(self, path: object, problem: str) -> None:
        self.path = str(path)
        self.problem = problem
        super().__init__(f"{self.path}: {problem}")


class DataLoaderError(BurnError, RuntimeError):
    """Reading an item or batching failed while iterating a data loader.

    ``index`` is the dataset index of the item that failed (``None`` when the batcher failed),
    ``batch_index`` the position of the batch in the epoch; the original exception is ``__cause__``.

    >>> def broken(items, device):
    ...     raise ValueError("bad batch")
    >>> loader = burn.data.DataLoaderBuilder(broken).build(burn.data.InMemDataset([1]))
    >>> try:
    ...     next(iter(loader))
    ... except burn.data.DataLoaderError as exc:
    ...     print(exc.index, exc.batch_index, repr(exc.__cause__))
    None 0 ValueError('bad batch')
    """

    def __init__(self, message: str, *, index: int | None, batch_index: int) -> None:
        self.index = index
        self.batch_index = batch_index
        super().__init__(message)
