"""The Batcher protocol: turn a list of items into one batch on a device."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol, TypeVar, runtime_checkable

I_contra = TypeVar("I_contra", contravariant=True)
B_co = TypeVar("B_co", covariant=True)


@runtime_checkable
class Batcher(Protocol[I_contra, B_co]):
    """An object with ``batch(items, device) -> batch`` (Burn's ``Batcher`` trait).

    With worker threads the data loader calls ``batch`` from those threads, so it should not rely on
    state shared between calls. A plain function ``(items, device) -> batch`` works too.

    >>> class TensorBatcher:
    ...     def batch(self, items, device):
    ...         return burn.tensor(items, device=device)   # n items -> shape (n,)
    >>> isinstance(TensorBatcher(), Batcher)
    True
    >>> ds = burn.data.InMemDataset([1.0, 2.0, 3.0])
    >>> loader = burn.data.DataLoaderBuilder(TensorBatcher()).batch_size(2).build(ds)
    >>> [batch.tolist() for batch in loader]
    [[1.0, 2.0], [3.0]]
    """

    def batch(self, items: Sequence[I_contra], device: Any) -> B_co: ...


class _FnBatcher:
    """Adapts a plain function ``fn(items, device)`` to the Batcher protocol."""

    def __init__(self, fn: Callable[[Sequence[Any], Any], Any]) -> None:
        self.fn = fn

    def batch(self, items: Sequence[Any], device: Any) -> Any:
        return self.fn(items, device)

    def __repr__(self) -> str:
        return f"Batcher({getattr(self.fn, '__name__', self.fn)!r})"


def as_batcher(batcher: Any) -> Batcher[Any, Any]:
    """``batcher`` itself when it has ``batch``; a function ``(items, device) -> batch`` is wrapped."""
    if callable(getattr(batcher, "batch", None)):
        return batcher
    if callable(batcher):
        return _FnBatcher(batcher)
    raise TypeError(
        f"DataLoaderBuilder: batcher must have a batch(items, device) method or be a function "
        f"(items, device) -> batch, got {type(batcher).__name__}"
    )
