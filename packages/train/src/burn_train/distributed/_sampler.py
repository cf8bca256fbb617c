"""The distributed sampler: each rank's share of every global batch, the same order on every rank.

The user's ``DataLoader`` describes the *global* training: ``batch_size`` items per optimizer step and
an epoch order that depends only on its shuffle seed and the epoch (``loader.batch_indices(epoch)``).
Rank ``r`` of ``n`` takes the ``r``-th contiguous part of each global batch (the first ``size % n``
ranks take one item more), so one step of ``n`` ranks covers exactly the items of one step of a single
process, and a script trains the same model whatever number of ranks it is launched with. A rank
whose part of a (short, last) batch is empty yields ``None`` for it and still takes part in the step.

>>> shard_bounds(10, rank=1, size=4), shard_bounds(2, rank=3, size=4)
((3, 6), (2, 2))
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


def shard_bounds(n: int, rank: int, size: int) -> tuple[int, int]:
    """``(start, end)`` of rank ``rank``'s contiguous part of ``n`` items split among ``size`` ranks."""
    base, extra = divmod(n, size)
    start = rank * base + min(rank, extra)
    return start, start + base + (1 if rank < extra else 0)


class _Shards:
    """A dataset whose item ``k`` is the list of dataset items of this rank's part of global batch ``k``."""

    def __init__(self, dataset: Any, shards: Sequence[Sequence[int]]) -> None:
        self.dataset = dataset
        self.shards = shards

    def __len__(self) -> int:
        return len(self.shards)

    def __getitem__(self, k: int) -> list[Any]:
        return [self.dataset[i] for i in self.shards[k]]


class _ShardBatcher:
    """Batches one ``_Shards`` item with the user's batcher; an empty part gives ``None``."""

    def __init__(self, batcher: Any) -> None:
        self.batcher = batcher

    def batch(self, items: Sequence[Sequence[Any]], device: Any) -> Any:
        (part,) = items
        return self.batcher.batch(part, device) if part else None


class ShardedLoader:
    """This rank's view of a ``burn.data.DataLoader`` (see the module doc): one epoch yields
    ``(batch or None, items)`` per global batch. Workers, device and drop_last are the loader's.

    ``set_epoch(e)`` picks epoch ``e``'s order (0-based); every rank must iterate the same epochs.
    Batches go to ``device`` (default: the loader's).
    """

    def __init__(self, loader: Any, rank: int, size: int, device: Any = None) -> None:
        missing = [a for a in ("batch_indices", "dataset", "batcher", "batch_size") if not hasattr(loader, a)]
        if missing:
            raise TypeError(
                "distributed training: the data loader must be a burn.data.DataLoader (with batch_indices, "
                f"dataset, batcher and batch_size); {type(loader).__name__} has no {', '.join(missing)}"
            )
        if not (isinstance(size, int) and size >= 1 and isinstance(rank, int) and 0 <= rank < size):
            raise ValueError(f"ShardedLoader: expected 0 <= rank < size, got rank={rank!r}, size={size!r}")
        self.loader, self.rank, self.size = loader, rank, size
        self.device = device if device is not None else getattr(loader, "device", None)
        self._epoch = int(getattr(loader, "epoch", 0))
        self.batch_size = shard_bounds(loader.batch_size, 0, size)[1]  # the largest part of a full batch

    def __len__(self) -> int:
        return len(self.loader)

    def num_items(self) -> int:
        """Items this rank reads per epoch (the same every epoch: parts depend on batch sizes only)."""
        return sum(b - a for a, b in (shard_bounds(len(ix), self.rank, self.size) for ix in self._global(0)))

    def set_epoch(self, epoch: int) -> None:
        if not isinstance(epoch, int) or epoch < 0:
            raise ValueError(f"ShardedLoader.set_epoch: expected an int >= 0, got {epoch!r}")
        self._epoch = epoch

    def _global(self, epoch: int) -> list[list[int]]:
        return [list(ix) for ix in self.loader.batch_indices(epoch)]

    def shards(self, epoch: int) -> list[list[int]]:
        """Dataset indices of this rank's part of every global batch of ``epoch``."""
        parts = []
        for ix in self._global(epoch):
            a, b = shard_bounds(len(ix), self.rank, self.size)
            parts.append(ix[a:b])
        return parts

    def __iter__(self) -> _Epoch:
        from burn.data import DataLoaderBuilder

        shards = self.shards(self._epoch)
        self._epoch += 1
        workers = int(getattr(self.loader, "num_workers", 0) or 0)
        parts: Any = (
            DataLoaderBuilder(_ShardBatcher(self.loader.batcher))
            .batch_size(1)
            .num_workers(workers)
            .set_device(self.device)
            .build(_Shards(self.loader.dataset, shards))
        )
        return _Epoch(iter(parts), [len(s) for s in shards])

    def __repr__(self) -> str:
        return f"ShardedLoader(rank={self.rank}, size={self.size}, batches={len(self)}, of={self.loader!r})"


class _Epoch:
    """``(batch or None, items)`` per global batch; ``close()`` stops the loader's workers."""

    def __init__(self, batches: Any, counts: list[int]) -> None:
        self._batches = batches
        self._counts = iter(counts)

    def __iter__(self) -> _Epoch:
        return self

    def __next__(self) -> tuple[Any, int]:
        return next(self._batches), next(self._counts)

    def close(self) -> None:
        close = getattr(self._batches, "close", None)
        if close is not None:
            close()
