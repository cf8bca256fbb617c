"""The Dataset protocol, index checking shared by every dataset, and the in-memory dataset."""

from __future__ import annotations

import operator
from collections.abc import Iterable, Iterator, Sequence
from typing import Any, Generic, Protocol, TypeVar, runtime_checkable

from .._errors import IndexOutOfRangeError

T = TypeVar("T")
T_co = TypeVar("T_co", covariant=True)


@runtime_checkable
class Dataset(Protocol[T_co]):
    """Anything with a length and integer indexing ``0 <= index < len(ds)`` is a dataset.

    Datasets are read concurrently by data-loader worker threads, so ``__getitem__`` must not depend
    on the order of calls (the random datasets here draw their whole index table up front for that).

    >>> class Squares:
    ...     def __len__(self):
    ...         return 4
    ...     def __getitem__(self, index):
    ...         return index * index
    >>> isinstance(Squares(), Dataset)
    True
    >>> list(burn.data.MapperDataset(Squares(), str))
    ['0', '1', '4', '9']
    """

    def __len__(self) -> int: ...

    def __getitem__(self, index: int) -> T_co: ...


def check_index(name: str, index: Any, length: int) -> int:
    """``index`` as a non-negative int below ``length``; negative indices count from the end."""
    if isinstance(index, bool):
        raise TypeError(f"{name}: index must be an int, got bool")
    try:
        i = operator.index(index)
    except TypeError:
        raise TypeError(f"{name}: index must be an int, got {type(index).__name__}") from None
    j = i + length if i < 0 else i
    if not 0 <= j < length:
        raise IndexOutOfRangeError(f"{name}: index {i} out of range for a dataset of {length} items")
    return j


def check_count(name: str, arg: str, value: Any, minimum: int = 0) -> int:
    """A plain int argument (size, start, ...) that must be at least ``minimum``."""
    if isinstance(value, bool) or not isinstance(value, int):
        try:
            value = operator.index(value)
        except TypeError:
            raise TypeError(f"{name}: {arg} must be an int, got {type(value).__name__}") from None
    if value < minimum:
        raise ValueError(f"{name}: {arg} must be >= {minimum}, got {value}")
    return value


class DatasetBase(Generic[T]):
    """Shared behaviour of burn's datasets: iteration and a short repr. Subclasses define the protocol."""

    def __len__(self) -> int:  # pragma: no cover - every subclass overrides
        raise NotImplementedError

    def __getitem__(self, index: int) -> T:  # pragma: no cover - every subclass overrides
        raise NotImplementedError

    def __iter__(self) -> Iterator[T]:
        for i in range(len(self)):
            yield self[i]

    def is_empty(self) -> bool:
        return len(self) == 0

    def __repr__(self) -> str:
        return f"{type(self).__name__}(len={len(self)})"


class InMemDataset(DatasetBase[T]):
    """A dataset over items held in a list.

    >>> ds = InMemDataset([1, 2, 3])
    >>> len(ds), ds[0], ds[-1]
    (3, 1, 3)

    ``InMemDataset.from_csv`` and ``InMemDataset.from_json_rows`` read rows from files.
    """

    def __init__(self, items: Iterable[T]) -> None:
        self._items: list[T] = list(items)

    def __len__(self) -> int:
        return len(self._items)

    def __getitem__(self, index: int) -> T:
        return self._items[check_index("InMemDataset", index, len(self._items))]

    @property
    def items(self) -> Sequence[T]:
        """The items, in order (a tuple copy)."""
        return tuple(self._items)

    @classmethod
    def from_csv(
        cls,
        path: Any,
        *,
        item_type: Any = None,
        types: dict[str, Any] | None = None,
        delimiter: str = ",",
    ) -> InMemDataset[Any]:
        """Rows of a CSV file with a header line, as dicts ``{column: value}``.

        ``types`` converts columns (``{"x": float, "label": int}``); with ``item_type`` (a dataclass or
        any callable taking the columns as keywords) each row becomes ``item_type(**row)``, and a
        dataclass's ``int``/``float``/``bool`` fields are converted without ``types``. Errors name the
        file, the line and the column.
        """
        from ._rows import read_csv_rows

        return cls(read_csv_rows(path, item_type=item_type, types=types, delimiter=delimiter))

    @classmethod
    def from_json_rows(cls, path: Any, *, item_type: Any = None) -> InMemDataset[Any]:
        """Rows of a JSON-lines file (one JSON value per line; blank lines skipped).

        With ``item_type`` each row (a JSON object) becomes ``item_type(**row)``.
        """
        from ._rows import read_json_rows

        return cls(read_json_rows(path, item_type=item_type))
