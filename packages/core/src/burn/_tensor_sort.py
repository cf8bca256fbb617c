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

    def sort_with_indices(self, dim: int = -1, descending: bool = False) -> tuple[Tensor, Tensor]:
        """Stable sort along ``dim``: (values, indices)."""
        d = norm_dim("sort", dim, self.ndim)
        v, i = self._b.sort(self._p, d, bool(descending))
        return _w(v, self._b), _w(i, self._b)

    def sort(self, dim: int = -1, descending: bool = False) -> Tensor:
        """Sorted values along ``dim`` (stable; Burn's ``sort``). See ``sort_with_indices``."""
        return self.sort_with_indices(dim, descending)[0]

    def argsort(self, dim: int = -1, descending: bool = False) -> Tensor:
        d = norm_dim("argsort", dim, self.ndim)
        return _w(self._b.argsort(self._p, d, bool(descending)), self._b)

    def topk_with_indices(self, k: int, dim: int = -1) -> tuple[Tensor, Tensor]:
        """The ``k`` largest values along ``dim`` in descending order, with their indices."""
        d = norm_dim("topk", dim, self.ndim)
        n = self.shape[d]
        if not isinstance(k, int) or not 0 <= k <= n:
            raise ValueError(f"topk: k must be an int in 0..{n} (dim {d} has size {n}), got {k!r}")
        v, i = self._b.topk(self._p, k, d)
        return _w(v, self._b), _w(i, self._b)

    def topk(self, k: int, dim: int = -1) -> Tensor:
        return self.topk_with_indices(k, dim)[0]

    def cumsum(self, dim: int) -> Tensor:
        d = norm_dim("cumsum", dim, self.ndim)
        x = self.int() if self.dtype.is_bool else self
        return _w(x._b.cumsum(x._p, d), x._b)

    def cumprod(self, dim: int) -> Tensor:
        d = norm_dim("cumprod", dim, self.ndim)
        x = self.int() if self.dtype.is_bool else self
        return _w(x._b.cumprod(x._p, d), x._b)
