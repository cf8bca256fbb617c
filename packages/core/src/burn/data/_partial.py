"""PartialDataset: a contiguous range of another dataset's items, without copying them."""

from __future__ import annotations

from typing import TypeVar

from ._dataset import Dataset, DatasetBase, check_count, check_index

T = TypeVar("T")


class PartialDataset(DatasetBase[T]):
    """Items ``start <= i < end`` of ``dataset`` (``end`` is clipped to the dataset's length).

    >>> from burn.data import InMemDataset
    >>> list(PartialDataset(InMemDataset(range(10)), 2, 5))
    [2, 3, 4]
    """

    def __init__(self, dataset: Dataset[T], start: int, end: int) -> None:
        start = check_count("PartialDataset", "start", start)
        end = check_count("PartialDataset", "end", end)
        if end < start:
            raise ValueError(f"PartialDataset: end ({end}) must be >= start ({start})")
        n = len(dataset)
        self.dataset = dataset
        self.start = min(start, n)
        self.end = min(end, n)

    def __len__(self) -> int:
        return self.end - self.start

    def __getitem__(self, index: int) -> T:
        return self.dataset[self.start + check_index("PartialDataset", index, len(self))]

    @staticmethod
    def split(dataset: Dataset[T], num: int) -> list[PartialDataset[T]]:
        """``num`` contiguous parts covering ``dataset``; the last takes the remainder."""
        num = check_count("PartialDataset.split", "num", num, minimum=1)
        n = len(dataset)
        step = n // num
        bounds = [i * step for i in range(num)] + [n]
        return [PartialDataset(dataset, bounds[i], bounds[i + 1]) for i in range(num)]

    def __repr__(self) -> str:
        return f"PartialDataset(start={self.start}, end={self.end}, of={type(self.dataset).__name__})"
