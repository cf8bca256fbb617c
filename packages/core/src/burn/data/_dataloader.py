"""DataLoaderBuilder and DataLoader: batches of a dataset, shuffled per epoch, loaded ahead by workers.

>>> from burn.data import DataLoaderBuilder, InMemDataset
>>> loader = DataLoaderBuilder(lambda items, device: sum(items)).batch_size(2).build(InMemDataset([1, 2, 3]))
>>> len(loader), list(loader)
(2, [3, 3])
"""

from __future__ import annotations

import operator
import sys
import warnings
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from .._errors import ConfigError
from ._batcher import Batcher, as_batcher
from ._dataset import Dataset
from ._fetch import load_batch
from ._partial import PartialDataset

if TYPE_CHECKING:
    from .._device import DeviceLike

B = TypeVar("B")

# Platforms where threads cannot start: num_workers > 0 falls back to loading in the main thread.
_NO_THREADS = ("emscripten", "wasi")


def _int_arg(name: str, value: Any, minimum: int) -> int:
    if isinstance(value, bool):
        raise TypeError(f"DataLoaderBuilder.{name}: expected an int, got bool")
    try:
        value = operator.index(value)
    except TypeError:
        raise TypeError(f"DataLoaderBuilder.{name}: expected an int, got {type(value).__name__}") from None
    if value < minimum:
        raise ConfigError(f"DataLoaderBuilder.{name}: must be >= {minimum}, got {value}")
    return value


class DataLoaderBuilder(Generic[B]):
    """Configures a DataLoader (Burn's builder): every setter returns the builder.

    >>> loader = (DataLoaderBuilder(lambda items, device: sum(items)).batch_size(4).shuffle(seed=42)
    ...           .num_workers(2).drop_last().build(burn.data.InMemDataset(range(10))))
    >>> len(loader), len(list(loader))   # 10 items: two full batches, the last 2 items dropped
    (2, 2)
    """

    def __init__(self, batcher: Batcher[Any, B] | Callable[[Sequence[Any], Any], B]) -> None:
        self._batcher = as_batcher(batcher)
        self._batch_size = 1
        self._seed: int | None = None
        self._num_workers = 0
        self._drop_last = False
        self._device: DeviceLike = None
        self._prefetch: int | None = None

    def batch_size(self, n: int) -> DataLoaderBuilder[B]:
        """Items per batch (default 1)."""
        self._batch_size = _int_arg("batch_size", n, 1)
        return self

    def shuffle(self, seed: int) -> DataLoaderBuilder[B]:
        """Shuffle each epoch; epoch ``e``'s order depends only on ``seed`` and ``e``."""
        self._seed = _int_arg("shuffle", seed, 0)
        return self

    def num_workers(self, n: int) -> DataLoaderBuilder[B]:
        """Worker threads loading batches ahead (default 0: load in the iterating thread)."""
        self._num_workers = _int_arg("num_workers", n, 0)
        return self

    def drop_last(self, drop: bool = True) -> DataLoaderBuilder[B]:
        """Skip the last batch when it has fewer than ``batch_size`` items."""
        self._drop_last = bool(drop)
        return self

    def prefetch(self, n: int) -> DataLoaderBuilder[B]:
        """Batches loading at most ahead of the consumer with workers (default ``2 * num_workers``)."""
        self._prefetch = _int_arg("prefetch", n, 1)
        return self

    def set_device(self, device: DeviceLike) -> DataLoaderBuilder[B]:
        """The device handed to ``batcher.batch`` (default: ``burn.default_device()`` at build)."""
        self._device = device
        return self

    def build(self, dataset: Dataset[Any]) -> DataLoader[B]:
        if not isinstance(dataset, Dataset):
            raise TypeError(
                f"DataLoaderBuilder.build: dataset must have __len__ and __getitem__, got {type(dataset).__name__}"
            )
        device = self._device
        if device is None:
            from .._device import default_device

            device = default_device()
        return DataLoader(
            dataset,
            self._batcher,
            batch_size=self._batch_size,
            seed=self._seed,
            num_workers=self._num_workers,
            drop_last=self._drop_last,
            device=device,
            prefetch=self._prefetch or 2 * self._num_workers,
        )


class DataLoader(Generic[B]):
    """Iterating gives one epoch of batches; each new iteration is the next epoch.

    ``len(loader)`` is the number of batches per epoch. Without ``shuffle`` the items come in dataset
    order. Errors reading an item or batching are raised in the iterating thread as
    ``burn.data.DataLoaderError`` naming the item's index, with the original exception chained.
    Breaking out of the loop (or an exception in its body) stops and joins the workers; an iterator
    kept by hand can be stopped with ``close()`` or used as ``with iter(loader) as batches: ...``.

    >>> ds = burn.data.InMemDataset([[float(i), float(i + 1)] for i in range(5)])
    >>> to_tensor = lambda items, device: burn.tensor(items, device=device)   # n items -> (n, 2)
    >>> loader = burn.data.DataLoaderBuilder(to_tensor).batch_size(2).shuffle(seed=0).build(ds)
    >>> len(loader), [batch.shape for batch in loader]
    (3, [(2, 2), (2, 2), (1, 2)])
    >>> sorted(i for batch in loader.batch_indices() for i in batch)   # each epoch: a permutation
    [0, 1, 2, 3, 4]
    """

    def __init__(
        self,
        dataset: Dataset[Any],
        batcher: Any,
        *,
        batch_size: int,
        seed: int | None,
        num_workers: int,
        drop_last: bool,
        device: Any,
        prefetch: int,
    ) -> None:
        self.dataset = dataset
        self.batcher = batcher
        self.batch_size = batch_size
        self.seed = seed
        self.num_workers = num_workers
        self.drop_last = drop_last
        self.device = device
        self.prefetch = prefetch
        self._epoch = 0

    def __len__(self) -> int:
        n = len(self.dataset)
        return n // self.batch_size if self.drop_last else -(-n // self.batch_size)

    def num_items(self) -> int:
        """Items in the dataset (those in a dropped last batch included)."""
        return len(self.dataset)

    @property
    def epoch(self) -> int:
        """The epoch the next iteration will produce (0 first)."""
        return self._epoch

    def set_epoch(self, epoch: int) -> None:
        """Make the next iteration produce ``epoch``'s order (to resume training exactly)."""
        self._epoch = _int_arg("set_epoch", epoch, 0)

    def batch_indices(self, epoch: int | None = None) -> list[list[int]]:
        """The dataset indices of every batch of ``epoch`` (default: the next one), in order."""
        n = len(self.dataset)
        if self.seed is None:
            order: Sequence[int] = range(n)
        else:
            import numpy as np

            e = self._epoch if epoch is None else _int_arg("batch_indices", epoch, 0)
            order = np.random.default_rng([self.seed, e]).permutation(n).tolist()
        bs = self.batch_size
        return [list(order[i : i + bs]) for i in range(0, len(self) * bs, bs)]

    def _load(self, batch_index: int, indices: Sequence[int], stopped: Any = None) -> Any:
        return load_batch(self.dataset, self.batcher, self.device, batch_index, indices, stopped)

    def __iter__(self) -> Iterator[B]:
        batches = self.batch_indices()
        self._epoch += 1
        workers = self.num_workers
        if workers and sys.platform in _NO_THREADS:
            warnings.warn(
                f"DataLoader: threads are unavailable on {sys.platform}; num_workers={workers} ignored, "
                "batches load in the main thread",
                RuntimeWarning,
                stacklevel=2,
            )
            workers = 0
        if workers == 0:
            return _InlineIterator(self._load, batches)
        from ._prefetch import PrefetchIterator

        return PrefetchIterator(self._load, batches, workers, self.prefetch)

    def _with(self, dataset: Dataset[Any], device: Any) -> DataLoader[B]:
        out: DataLoader[B] = DataLoader(
            dataset,
            self.batcher,
            batch_size=self.batch_size,
            seed=self.seed,
            num_workers=self.num_workers,
            drop_last=self.drop_last,
            device=device,
            prefetch=self.prefetch,
        )
        out._epoch = self._epoch
        return out

    def slice(self, start: int, end: int) -> DataLoader[B]:
        """A loader with the same settings over items ``start <= i < end`` of the dataset."""
        return self._with(PartialDataset(self.dataset, start, end), self.device)

    def split(self, num: int) -> list[DataLoader[B]]:
        """``num`` loaders over contiguous parts of the dataset (one per device in data parallelism)."""
        return [self._with(part, self.device) for part in PartialDataset.split(self.dataset, num)]

    def to_device(self, device: Any) -> DataLoader[B]:
        """The same loader, batching onto ``device``."""
        return self._with(self.dataset, device)

    def __repr__(self) -> str:
        return (
            f"DataLoader(batches={len(self)}, batch_size={self.batch_size}, shuffle={self.seed}, "
            f"num_workers={self.num_workers}, drop_last={self.drop_last}, device={self.device})"
        )


class _InlineIterator:
    """One epoch loaded in the iterating thread, batch by batch (no threads anywhere)."""

    def __init__(self, load: Any, batches: list[list[int]]) -> None:
        self._load = load
        self._batches = batches
        self._next = 0

    def __iter__(self) -> _InlineIterator:
        return self

    def __next__(self) -> Any:
        k = self._next
        if k >= len(self._batches):
            raise StopIteration
        self._next += 1
        try:
            return self._load(k, self._batches[k])
        except BaseException:
            self.close()  # same as with workers: an error ends the epoch
            raise

    def __len__(self) -> int:
        return len(self._batches) - self._next

    def close(self) -> None:
        self._next = len(self._batches)

    def __enter__(self) -> _InlineIterator:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
