"""Loading one batch: read its items, batch them, and turn any failure into a DataLoaderError.

Used the same way by the main-thread loader and by worker threads, so errors read the same in both.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from ._errors import DataLoaderError


class Cancelled(Exception):
    """Raised inside a worker when the consumer has stopped; never reaches the user."""


def load_batch(
    dataset: Any,
    batcher: Any,
    device: Any,
    batch_index: int,
    indices: Sequence[int],
    stopped: Callable[[], bool] | None = None,
) -> Any:
    """``batcher.batch([dataset[i] for i in indices], device)``, failures wrapped with the item index."""
    items = []
    for i in indices:
        if stopped is not None and stopped():
            raise Cancelled
        try:
            items.append(dataset[i])
        except Exception as exc:
            raise DataLoaderError(
                f"data loader: reading item {i} of {type(dataset).__name__} (batch {batch_index}) failed: "
                f"{type(exc).__name__}: {exc}",
                index=i,
                batch_index=batch_index,
            ) from exc
    try:
        return batcher.batch(items, device)
    except Exception as exc:
        shown = ", ".join(map(str, indices[:8])) + (", ..." if len(indices) > 8 else "")
        raise DataLoaderError(
            f"data loader: {type(batcher).__name__}.batch failed on batch {batch_index} "
            f"(items {shown}): {type(exc).__name__}: {exc}",
            index=None,
            batch_index=batch_index,
        ) from exc
