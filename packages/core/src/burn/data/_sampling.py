"""Random views of a dataset: ShuffledDataset (a seeded permutation) and SamplerDataset (draws).

Both draw their whole index table when built, so reading item ``i`` gives the same item whatever the
order of reads: data-loader worker threads cannot change what a seed produces.
"""

from __future__ import annotations

import operator
from typing import Any, TypeVar

from ._dataset import Dataset, DatasetBase, check_count, check_index

T = TypeVar("T")


def _rng(name: str, seed: int | None) -> Any:
    import numpy as np

    if seed is None:
        return np.random.default_rng()
    if isinstance(seed, bool):
        raise TypeError(f"{name}: seed must be an int or None, got bool")
    try:
        seed = operator.index(seed)
    except TypeError:
        raise TypeError(f"{name}: seed must be an int or None, got {type(seed).__name__}") from None
    if seed < 0:
        raise ValueError(f"{name}: seed must be >= 0, got {seed}")
    return np.random.default_rng(seed)


class ShuffledDataset(DatasetBase[T]):
    """The items of ``dataset`` in an order drawn from ``seed`` (``None``: fresh entropy each build).

    >>> from burn.data import InMemDataset
    >>> sorted(ShuffledDataset(InMemDataset(range(5)), seed=0)) == list(range(5))
    True
    """

    def __init__(self, dataset: Dataset[T], seed: int | None = None) -> None:
        self.dataset = dataset
        self.seed = seed
        self._indices: list[int] = _rng("ShuffledDataset", seed).permutation(len(dataset)).tolist()

    def __len__(self) -> int:
        return len(self._indices)

    def __getitem__(self, index: int) -> T:
        return self.dataset[self._indices[check_index("ShuffledDataset", index, len(self._indices))]]


class SamplerDataset(DatasetBase[T]):
    """``size`` items drawn from ``dataset``, with or without replacement.

    With replacement every draw is independent and uniform. Without replacement the draws walk through
    random permutations of the dataset, one after another, so each item appears once per pass (a
    ``size`` larger than the dataset repeats items only after all have been seen).

    >>> from burn.data import InMemDataset
    >>> len(SamplerDataset(InMemDataset(range(3)), size=10, seed=1))
    10
    """

    def __init__(
        self, dataset: Dataset[T], size: int, *, replacement: bool = True, seed: int | None = None
    ) -> None:
        size = check_count("SamplerDataset", "size", size)
        n = len(dataset)
        if n == 0 and size > 0:
            raise ValueError(f"SamplerDataset: cannot draw {size} items from an empty dataset")
        rng = _rng("SamplerDataset", seed)
        self.dataset = dataset
        self.replacement = bool(replacement)
        self.seed = seed
        if self.replacement:
            self._indices: list[int] = rng.integers(0, max(n, 1), size=size).tolist()
        else:
            passes = -(-size // n) if n else 0
            indices: list[int] = []
            for _ in range(passes):
                indices.extend(rng.permutation(n).tolist())
            self._indices = indices[:size]

    def __len__(self) -> int:
        return len(self._indices)

    def __getitem__(self, index: int) -> T:
        return self.dataset[self._indices[check_index("SamplerDataset", index, len(self._indices))]]
