"""Sorting and scans of ``burn.Tensor`` along one dim (a mixin of the Tensor class through
``ShapeOps``): ``sort``, ``argsort``, ``topk`` and ``cumsum``/``cumprod``."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._checks import norm_dim
from ._tensor_index import _w

if TYPE_CHECKING:
    from ._tensor import Tensor


class SortOps:
    __slots__ = ()

    def sort_with_indices(self: Tensor, dim: int = -1, descending: bool = False) -> tuple[Tensor, Tensor]:
        """Stable sort along ``dim``: (values, indices), both of the tensor's shape.

        >>> values, indices = burn.tensor([3, 1, 2]).sort_with_indices()
        >>> values.tolist(), indices.tolist()
        ([1, 2, 3], [1, 2, 0])
        """
        d = norm_dim("sort", dim, self.ndim)
        v, i = self._b.sort(self._p, d, bool(descending))
        return _w(v, self._b), _w(i, self._b)

    def sort(self: Tensor, dim: int = -1, descending: bool = False) -> Tensor:
        """Sorted values along ``dim`` (stable; Burn's ``sort``); the shape is unchanged. See
        ``sort_with_indices``.

        >>> burn.tensor([[3, 1, 2], [0, 5, 4]]).sort(descending=True).tolist()
        [[3, 2, 1], [5, 4, 0]]
        """
        return self.sort_with_indices(dim, descending)[0]

    def argsort(self: Tensor, dim: int = -1, descending: bool = False) -> Tensor:
        """Indices that sort along ``dim`` (stable: ties keep their order); the shape is unchanged.

        >>> burn.tensor([3, 1, 2, 1]).argsort().tolist()
        [1, 3, 2, 0]
        """
        d = norm_dim("argsort", dim, self.ndim)
        return _w(self._b.argsort(self._p, d, bool(descending)), self._b)

    def topk_with_indices(self: Tensor, k: int, dim: int = -1) -> tuple[Tensor, Tensor]:
        """The ``k`` largest values along ``dim`` in descending order, with their indices.

        Shapes: (..., n) -> (..., k) twice (for the default ``dim=-1``).

        >>> values, indices = burn.tensor([1, 5, 3, 4]).topk_with_indices(2)
        >>> values.tolist(), indices.tolist()
        ([5, 4], [1, 3])
        """
        d = norm_dim("topk", dim, self.ndim)
        n = self.shape[d]
        if not isinstance(k, int) or not 0 <= k <= n:
            raise ValueError(f"topk: k must be an int in 0..{n} (dim {d} has size {n}), got {k!r}")
        v, i = self._b.topk(self._p, k, d)
        return _w(v, self._b), _w(i, self._b)

    def topk(self: Tensor, k: int, dim: int = -1) -> Tensor:
        """The ``k`` largest values along ``dim``, in descending order: (..., n) -> (..., k) for ``dim=-1``.

        >>> burn.tensor([[1, 5, 3], [9, 0, 2]]).topk(2).tolist()
        [[5, 3], [9, 2]]
        """
        return self.topk_with_indices(k, dim)[0]

    def cumsum(self: Tensor, dim: int) -> Tensor:
        """Running sum along ``dim`` (bools count as the default int); the shape is unchanged.

        >>> burn.tensor([[1, 2, 3], [4, 5, 6]]).cumsum(1).tolist()
        [[1, 3, 6], [4, 9, 15]]
        """
        d = norm_dim("cumsum", dim, self.ndim)
        x = self.int() if self.dtype.is_bool else self
        return _w(x._b.cumsum(x._p, d), x._b)

    def cumprod(self: Tensor, dim: int) -> Tensor:
        """Running product along ``dim`` (bools count as the default int); the shape is unchanged.

        >>> burn.tensor([[1, 2, 3], [4, 5, 6]]).cumprod(0).tolist()
        [[1, 2, 3], [4, 10, 18]]
        """
        d = norm_dim("cumprod", dim, self.ndim)
        x = self.int() if self.dtype.is_bool else self
        return _w(x._b.cumprod(x._p, d), x._b)
