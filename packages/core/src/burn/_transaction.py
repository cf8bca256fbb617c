"""``burn.Transaction``: read several tensors with one device sync."""

from __future__ import annotations

from typing import Any

from ._tensor import Tensor


class Transaction:
    """Collect tensors, then read them all at once.

    >>> a, b = burn.ones(2), burn.zeros(3)
    >>> burn.Transaction().register(a).register(b).execute()   # [array([1., 1.]), array([0., 0., 0.])]
    """

    def __init__(self) -> None:
        self._tensors: list[Tensor] = []

    def register(self, tensor: Tensor) -> Transaction:
        if not isinstance(tensor, Tensor):
            raise TypeError(f"Transaction.register: expected a Tensor, got {type(tensor).__name__}")
        self._tensors.append(tensor)
        return self

    def __len__(self) -> int:
        return len(self._tensors)

    def execute(self) -> list[Any]:
        """numpy arrays in registration order; one ``read_many`` per backend involved."""
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
