"""Shape ops of ``burn.Tensor``: reshaping, expanding, flipping, splitting, triangles and padding.

``ShapeOps`` is the mixin the Tensor class inherits; it gathers the indexing ops (``_tensor_index``)
and the sorting and scans (``_tensor_sort``), so every method keeps its name and place in the MRO.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from . import _tensor as _T
from ._checks import infer_reshape, keyword_aliases, norm_dim, norm_dims, shape_arg
from ._errors import IndexOutOfRangeError, ShapeError
from ._tensor_index import IndexOps, _full_index, _w
from ._tensor_sort import SortOps

if TYPE_CHECKING:
    from ._tensor import Tensor


class ShapeOps(IndexOps, SortOps):
    __slots__ = ()

    # ------------------------------------------------------------------ reshaping
    def reshape(self: Tensor, *shape: Any) -> Tensor:
        """A tensor with the same values in a new shape; one entry may be -1 (inferred).

        Shapes: (...) -> ``shape``, with the same number of elements; ``reshape(2, 3)`` or
        ``reshape((2, 3))``.

        >>> burn.arange(6).reshape(2, -1).shape
        (2, 3)
        >>> burn.arange(4).reshape(2, 2).tolist()
        [[0, 1], [2, 3]]
        """
        new = infer_reshape("reshape", self.shape, shape_arg("reshape", shape))
        if new == self.shape:
            return self
        return _w(self._b.reshape(self._p, new), self._b)

    view = reshape

    def permute(self: Tensor, *dims: Any) -> Tensor:
        """Reorder the dims: result dim ``i`` is input dim ``dims[i]`` (each dim named once).

        >>> burn.zeros(2, 3, 4).permute(2, 0, 1).shape
        (4, 2, 3)
        """
        dims = shape_arg("permute", dims, "dims")
        n = self.ndim
        if len(dims) != n:
            raise ShapeError(f"permute: dims {dims} must name each of the {n} dims once")
        norm = tuple(norm_dim("permute", d, n, "dims") for d in dims)
        if sorted(norm) != list(range(n)):
            raise ShapeError(f"permute: dims {dims} must be a permutation of 0..{n - 1}")
        return _w(self._b.permute(self._p, norm), self._b)

    @keyword_aliases(d0="dim0", d1="dim1")
    def transpose(self: Tensor, dim0: int = -2, dim1: int = -1) -> Tensor:
        """Swap two dims (the last two by default): (..., n, m) -> (..., m, n).

        >>> burn.tensor([[1, 2, 3]]).transpose().tolist()
        [[1], [2], [3]]
        >>> burn.zeros(2, 3, 4).transpose(0, 2).shape
        (4, 3, 2)
        """
        n = self.ndim
        a, b = norm_dim("transpose", dim0, n, "dim0"), norm_dim("transpose", dim1, n, "dim1")
        order = list(range(n))
        order[a], order[b] = order[b], order[a]
        return _w(self._b.permute(self._p, tuple(order)), self._b)

    swap_dims = transpose

    @property
    def T(self: Tensor) -> Tensor:
        """Every dim reversed: (a, b, c) -> (c, b, a); the matrix transpose of a 2-d tensor.

        >>> burn.tensor([[1, 2], [3, 4]]).T.tolist()
        [[1, 3], [2, 4]]
        """
        return self.permute(*reversed(range(self.ndim)))

    @keyword_aliases(start="start_dim", end="end_dim")
    def flatten(self: Tensor, start_dim: int = 0, end_dim: int = -1) -> Tensor:
        """Merge dims ``start_dim..end_dim`` (inclusive) into one; a 0-d tensor becomes (1,).

        >>> burn.zeros(2, 3, 4).flatten().shape, burn.zeros(2, 3, 4).flatten(1).shape
        ((24,), (2, 12))
        """
        shape = self.shape
        if not shape:
            return self.reshape(1)
        s = norm_dim("flatten", start_dim, len(shape), "start_dim")
        e = norm_dim("flatten", end_dim, len(shape), "end_dim")
        if s > e:
            raise ShapeError(f"flatten: start_dim {start_dim} comes after end_dim {end_dim}")
        n = 1
        for v in shape[s : e + 1]:
            n *= v
        return self.reshape(shape[:s] + (n,) + shape[e + 1 :])

    def unsqueeze(self: Tensor, dim: int = 0) -> Tensor:
        """Insert a size-1 dim at ``dim``: (n,) -> (1, n) for ``dim=0``, (n, 1) for ``dim=1``.

        >>> burn.zeros(3).unsqueeze(0).shape, burn.zeros(3).unsqueeze(-1).shape
        ((1, 3), (3, 1))
        """
        shape = list(self.shape)
        d = norm_dim("unsqueeze", dim, len(shape) + 1)
        shape.insert(d, 1)
        return _w(self._b.reshape(self._p, tuple(shape)), self._b)

    def squeeze(self: Tensor, dim: int | Sequence[int] | None = None) -> Tensor:
        """Drop size-1 dims: all of them, or the given ones (which must have size 1).

        >>> burn.zeros(1, 3, 1).squeeze().shape, burn.zeros(1, 3, 1).squeeze(0).shape
        ((3,), (3, 1))
        """
        shape = self.shape
        if dim is None:
            new = tuple(s for s in shape if s != 1)
        else:
            dims = norm_dims("squeeze", dim, len(shape))
            for d in dims:
                if shape[d] != 1:
                    raise ShapeError(f"squeeze: dim {d} has size {shape[d]}, expected 1 (shape {shape})")
            new = tuple(s for i, s in enumerate(shape) if i not in dims)
        return self.reshape(new) if new != shape else self

    def expand(self: Tensor, *shape: Any) -> Tensor:
        """Broadcast to ``shape`` without copying; -1 keeps a dim, new dims go in front.

        Shapes: size-1 dims grow to ``shape``'s sizes: (2, 1) -> (2, 3); (3,) -> (2, 3).

        >>> burn.tensor([[1], [2]]).expand(2, 3).tolist()
        [[1, 1, 1], [2, 2, 2]]
        >>> burn.zeros(3).expand(2, -1).shape
        (2, 3)
        """
        target = shape_arg("expand", shape)
        cur = self.shape
        if len(target) < len(cur):
            raise ShapeError(f"expand: target {target} has fewer dims than the tensor's shape {cur}")
        lead = len(target) - len(cur)
        full = (1,) * lead + cur
        out = []
        for i, (have, want) in enumerate(zip(full, target)):
            if want == -1:
                if i < lead:
                    raise ShapeError(f"expand: -1 is not allowed for the new leading dim {i} in {target}")
                want = have
            if have != want and have != 1:
                raise ShapeError(
                    f"expand: dim {i} of size {have} cannot expand to {want} (shape {cur} -> {target})"
                )
            out.append(want)
        out_t = tuple(out)
        if out_t == cur:
            return self
        x = self._p if not lead else self._b.reshape(self._p, full)
        return _w(self._b.expand(x, out_t), self._b)

    def broadcast_to(self: Tensor, *shape: Any) -> Tensor:
        """Broadcast to ``shape``, as ``expand``.

        >>> burn.tensor([1, 2]).broadcast_to(2, 2).tolist()
        [[1, 2], [1, 2]]
        """
        return self.expand(*shape)

    def repeat(self: Tensor, *reps: Any) -> Tensor:
        """Tile the tensor ``reps[d]`` times along each dim (extra reps add leading dims).

        Shapes: (d0, ..., dn) -> (d0 * r0, ..., dn * rn).

        >>> burn.tensor([[1, 2]]).repeat(2, 2).tolist()
        [[1, 2, 1, 2], [1, 2, 1, 2]]
        """
        reps = shape_arg("repeat", reps, "reps")
        if len(reps) < self.ndim:
            raise ShapeError(f"repeat: need at least {self.ndim} repeats for shape {self.shape}, got {reps}")
        x = self.reshape((1,) * (len(reps) - self.ndim) + self.shape)
        return _w(self._b.repeat(x._p, reps), self._b)

    def repeat_dim(self: Tensor, dim: int, times: int) -> Tensor:
        """Tile ``times`` times along one dim: (..., n, ...) -> (..., n * times, ...).

        >>> burn.tensor([[1, 2]]).repeat_dim(0, 3).tolist()
        [[1, 2], [1, 2], [1, 2]]
        """
        reps = [1] * self.ndim
        reps[norm_dim("repeat_dim", dim, self.ndim)] = times
        return self.repeat(*reps)

    def flip(self: Tensor, dims: int | Sequence[int]) -> Tensor:
        """Reverse the order along ``dims`` (an int or a sequence of ints); the shape is unchanged.

        >>> x = burn.tensor([[1, 2], [3, 4]])
        >>> x.flip(1).tolist(), x.flip((0, 1)).tolist()
        ([[2, 1], [4, 3]], [[4, 3], [2, 1]])
        """
        d = norm_dims("flip", dims, self.ndim, "dims")
        return _w(self._b.flip(self._p, d), self._b) if d else self

    @keyword_aliases(len="length")
    def narrow(self: Tensor, dim: int, start: int, length: int) -> Tensor:
        """``length`` entries of ``dim`` from ``start``: (..., n, ...) -> (..., length, ...).

        >>> burn.arange(5).narrow(0, 1, 3).tolist()
        [1, 2, 3]
        """
        d = norm_dim("narrow", dim, self.ndim)
        n = self.shape[d]
        if start < 0:
            start += n
        if not (0 <= start <= n) or length < 0 or start + length > n:
            raise IndexOutOfRangeError(
                f"narrow: start={start}, length={length} out of range for dim {d} of size {n}"
            )
        index = _full_index(self.shape)
        index[d] = (start, start + length, 1)
        return _w(self._b.slice(self._p, tuple(index)), self._b)

    # ------------------------------------------------------------------ joining and splitting
    @keyword_aliases(size_or_sizes="split_size_or_sections")
    def split(self: Tensor, split_size_or_sections: int | Sequence[int], dim: int = 0) -> list[Tensor]:
        """Split into chunks of ``split_size`` (the last may be smaller) or of the given sizes along ``dim``.

        >>> [t.tolist() for t in burn.arange(5).split(2)]
        [[0, 1], [2, 3], [4]]
        >>> [t.shape for t in burn.zeros(2, 5).split([1, 4], dim=1)]
        [(2, 1), (2, 4)]
        """
        d = norm_dim("split", dim, self.ndim)
        n = self.shape[d]
        if isinstance(split_size_or_sections, int):
            size = split_size_or_sections
            if size <= 0:
                raise ValueError(f"split: split_size must be positive, got {size}")
            sizes = [min(size, n - s) for s in range(0, n, size)] or [0]
        else:
            sizes = list(split_size_or_sections)
            if sum(sizes) != n or any(s < 0 for s in sizes):
                raise ShapeError(f"split: sizes {sizes} must be non-negative and sum to dim {d}'s size {n}")
        out, start = [], 0
        for s in sizes:
            out.append(self.narrow(d, start, s))
            start += s
        return out

    @keyword_aliases(n="chunks")
    def chunk(self: Tensor, chunks: int, dim: int = 0) -> list[Tensor]:
        """Split into at most ``chunks`` equal pieces along ``dim`` (the last may be smaller), as PyTorch.

        >>> [t.tolist() for t in burn.arange(5).chunk(3)]
        [[0, 1], [2, 3], [4]]
        """
        if not isinstance(chunks, int) or chunks <= 0:
            raise ValueError(f"chunk: chunks must be a positive int, got {chunks!r}")
        d = norm_dim("chunk", dim, self.ndim)
        n = self.shape[d]
        size = max(-(-n // chunks), 1)
        return self.split(size, d)

    # ------------------------------------------------------------------ triangles
    @keyword_aliases(k="diagonal")
    def tril(self: Tensor, diagonal: int = 0) -> Tensor:
        """Keep the lower triangle (the last two dims), zero above ``diagonal``; the shape is unchanged.

        >>> burn.tensor([[1, 2, 3], [4, 5, 6], [7, 8, 9]]).tril().tolist()
        [[1, 0, 0], [4, 5, 0], [7, 8, 9]]
        """
        if self.ndim < 2:
            raise ShapeError(f"tril: needs at least 2 dims, got shape {self.shape}")
        return _w(self._b.tril(self._p, diagonal), self._b)

    @keyword_aliases(k="diagonal")
    def triu(self: Tensor, diagonal: int = 0) -> Tensor:
        """Keep the upper triangle (the last two dims), zero below ``diagonal``; the shape is unchanged.

        >>> burn.tensor([[1, 2, 3], [4, 5, 6], [7, 8, 9]]).triu(1).tolist()
        [[0, 2, 3], [0, 0, 6], [0, 0, 0]]
        """
        if self.ndim < 2:
            raise ShapeError(f"triu: needs at least 2 dims, got shape {self.shape}")
        return _w(self._b.triu(self._p, diagonal), self._b)

    # ------------------------------------------------------------------ padding
    def pad(self: Tensor, pads: Sequence[int], mode: str = "constant", value: float = 0.0) -> Tensor:
        """Pad as PyTorch's ``F.pad``: ``pads = (last_left, last_right, prev_left, prev_right, ...)``.

        ``mode``: "constant" (fill with ``value``), "reflect" (mirror, edge not repeated; pads must be
        smaller than the dim) or "edge" (repeat the edge value; also called "replicate").

        Shapes: each padded dim grows by its left + right pads: (2, 3) with (1, 1, 2, 0) -> (4, 5).

        >>> burn.zeros(2, 3).pad((1, 1, 2, 0)).shape
        (4, 5)
        >>> burn.tensor([1, 2, 3]).pad((2, 1), value=9).tolist()
        [9, 9, 1, 2, 3, 9]
        >>> burn.tensor([1, 2, 3]).pad((2, 0), mode="reflect").tolist()
        [3, 2, 1, 2, 3]
        >>> burn.tensor([1, 2, 3]).pad((1, 1), mode="edge").tolist()
        [1, 1, 2, 3, 3]
        """
        pads = tuple(pads)
        if len(pads) % 2 or len(pads) // 2 > self.ndim:
            raise ValueError(f"pad: pads must hold pairs for at most {self.ndim} dims, got {pads}")
        if any(not isinstance(p, int) or p < 0 for p in pads):
            raise ValueError(f"pad: pads must be non-negative ints, got {pads}")
        mode = {"replicate": "edge"}.get(mode, mode)
        if mode not in ("constant", "reflect", "edge"):
            raise ValueError(f"pad: mode must be 'constant', 'reflect' or 'edge', got {mode!r}")
        per_dim = [(0, 0)] * self.ndim
        for i in range(len(pads) // 2):
            per_dim[self.ndim - 1 - i] = (pads[2 * i], pads[2 * i + 1])
        for d, (a, b) in enumerate(per_dim):
            n = self.shape[d]
            if mode == "reflect" and (a >= n or b >= n) and (a or b):
                raise ValueError(f"pad: reflect pads ({a}, {b}) must be smaller than dim {d}'s size {n}")
            if mode == "edge" and n == 0 and (a or b):
                raise ValueError(f"pad: edge padding needs a non-empty dim {d}")
        if not isinstance(value, (int, float)):
            raise TypeError(f"pad: value must be a number, got {type(value).__name__}")
        x = self
        if isinstance(value, float) and not self.dtype.is_float and not value.is_integer():
            x = self.float()  # a fractional (or NaN/inf) fill needs a float tensor

        return _w(x._b.pad(x._p, tuple(per_dim), mode, _T._scalar_for(x.dtype, value)), x._b)
