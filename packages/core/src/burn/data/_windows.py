"""WindowsDataset: overlapping windows of consecutive items (sequence models, time series)."""

from __future__ import annotations

from typing import TypeVar

from ._dataset import Dataset, DatasetBase, check_count, check_index

T = TypeVar("T")


class WindowsDataset(DatasetBase[list[T]]):
    """Item ``i`` is ``[dataset[i], ..., dataset[i + size - 1]]``; there are ``len(dataset) - size + 1``.

    >>> from burn.data import InMemDataset
    >>> ds = WindowsDataset(InMemDataset([1, 2, 3, 4]), size=3)
    >>> len(ds), ds[1]
    (2, [2, 3, 4])
    """

    def __init__(self, dataset: Dataset[T], size: int) -> None:
        self.size = check_count("WindowsDataset", "size", size, minimum=1)
        self.dataset = dataset

    def __len__(self) -> int:
        return max(len(self.dataset) - self.size + 1, 0)

    def __getitem__(self, index: int) -> list[T]:
        start = check_index("WindowsDataset", index, len(self))
        return [self.dataset[start + k] for k in range(self.size)]
