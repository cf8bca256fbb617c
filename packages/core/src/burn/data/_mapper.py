"""MapperDataset: a dataset whose items pass through a function on the way out (lazily, per item)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol, TypeVar, runtime_checkable

from ._dataset import Dataset, DatasetBase

I_contra = TypeVar("I_contra", contravariant=True)
O_co = TypeVar("O_co", covariant=True)
O = TypeVar("O")


@runtime_checkable
class Mapper(Protocol[I_contra, O_co]):
    """An object with ``map(item) -> item`` (Burn's ``Mapper`` trait). Plain callables work too.

    >>> class Scale:
    ...     def map(self, item):
    ...         return 10 * item
    >>> isinstance(Scale(), Mapper)
    True
    >>> list(MapperDataset(burn.data.InMemDataset([1, 2]), Scale()))
    [10, 20]
    """

    def map(self, item: I_contra) -> O_co: ...


class MapperDataset(DatasetBase[O]):
    """Items of ``dataset`` transformed by ``mapper`` each time they are read.

    ``mapper`` is a ``Mapper`` (an object with ``map(item)``) or any callable ``item -> item``.

    >>> from burn.data import InMemDataset
    >>> MapperDataset(InMemDataset([1, 2]), lambda x: 10 * x)[1]
    20
    """

    def __init__(self, dataset: Dataset[Any], mapper: Mapper[Any, O] | Callable[[Any], O]) -> None:
        fn = getattr(mapper, "map", None)
        if fn is None and not callable(mapper):
            raise TypeError(
                f"MapperDataset: mapper must have a map(item) method or be callable, got {type(mapper).__name__}"
            )
        self.dataset = dataset
        self.mapper = mapper
        self._fn: Callable[[Any], O] = fn if callable(fn) else mapper  # type: ignore[assignment]

    def __len__(self) -> int:
        return len(self.dataset)

    def __getitem__(self, index: int) -> O:
        return self._fn(self.dataset[index])
