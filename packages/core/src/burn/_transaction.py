"""``burn.Transaction``: read several tensors with one device sync."""

from __future__ import annotations

from typing import Any

from ._tensor import Tensor


class Transaction:
    """Collect tensors, then read them all at once.

    >>> a, b = burn.ones(2), burn.zeros(3)
    >>> [arr.tolist() for arr in burn.Transaction().register(a).register(b).execute()]
    [[1.0, 1.0], [0.0, 0.0, 0.0]]
    """

    def __init__(self) -> None:
        self._tensors: list[Tensor] = []

    def register(self, tensor: Tensor) -> Transaction:
        """Add a tensor to read; returns the transaction, so calls chain.

        >>> len(burn.Transaction().register(burn.zeros(2)).register(burn.ones(3)))
        2
        """
        if not isinstance(tensor, Tensor):
            raise TypeError(f"Transaction.register: expected a Tensor, got {type(tensor).__name__}")
        self._tensors.append(tensor)
        return self

    def __len__(self) -> int:
        return len(self._tensors)

    def execute(self) -> list[Any]:
        """numpy arrays in registration order (each of its tensor's shape); one ``read_many`` per backend.

        >>> [a.shape for a in burn.Transaction().register(burn.zeros(2, 3)).register(burn.ones(4)).execute()]
        [(2, 3), (4,)]
        """
        groups: dict[int, tuple[Any, list[int]]] = {}
        for i, t in enumerate(self._tensors):
            b = t._b.inner if t._b.is_autodiff else t._b
            groups.setdefault(id(b), (b, []))[1].append(i)
        out: list[Any] = [None] * len(self._tensors)
        for b, idxs in groups.values():
            arrays = b.read_many([self._tensors[i]._inner_prim() for i in idxs])
            for i, arr in zip(idxs, arrays):
                out[i] = arr
        return out
