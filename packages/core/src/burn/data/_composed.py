"""ComposedDataset: several datasets read one after another as a single dataset."""

from __future__ import annotations

import bisect
from collections.abc import Iterable
from itertools import accumulate
from typing import Any

from ._dataset import Dataset, DatasetBase, check_index


class ComposedDataset(DatasetBase[Any]):
    """The items of ``datasets[0]``, then of ``datasets[1]``, and so on.

    The parts' lengths are read once, when the composed dataset is built.

    >>> from burn.data import InMemDataset
    >>> list(ComposedDataset([InMemDataset([1, 2]), InMemDataset([3])]))
    [1, 2, 3]
    """

    def __init__(self, datasets: Iterable[Dataset[Any]]) -> None:
        self.datasets = list(datasets)
        for k, ds in enumerate(self.datasets):
            if not isinstance(ds, Dataset):
                raise TypeError(
                    f"ComposedDataset: datasets[{k}] must have __len__ and __getitem__, got {type(ds).__name__}"
                )
        self._ends = list(accumulate(len(ds) for ds in self.datasets))

    def __len__(self) -> int:
        return self._ends[-1] if self._ends else 0

    def __getitem__(self, index: int) -> Any:
        i = check_index("ComposedDataset", index, len(self))
        part = bisect.bisect_right(self._ends, i)
        start = self._ends[part - 1] if part else 0
        return self.datasets[part][i - start]
