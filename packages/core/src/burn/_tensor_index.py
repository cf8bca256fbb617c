"""Indexing ops of ``burn.Tensor`` (a mixin of the Tensor class through ``ShapeOps``): ``t[...]``,
``slice_assign``, and the index ops ``gather``, ``scatter_add``, ``select``, ``select_add``,
``mask_fill`` and ``one_hot``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from . import _dtype as D
from . import _tensor as _T
from ._checks import norm_dim
from ._errors import DeviceError, DTypeError, IndexOutOfRangeError, ShapeError
from .backend._shapes import broadcast_shapes

if TYPE_CHECKING:
    from ._tensor import Tensor


def _w(prim: Any, backend: Any, dtype: D.DType | None = None) -> Tensor:
    return _T._wrap(prim, backend, dtype)


def _full_index(shape: tuple[int, ...]) -> list[tuple[int, int, int]]:
    return [(0, n, 1) for n in shape]


def _is_index_tensor(item: Any) -> bool:
    if isinstance(item, _T.Tensor):
        return True
    if isinstance(item, (list, tuple)):
        return True
    return hasattr(item, "__array__") and hasattr(item, "dtype")


class IndexOps:
    __slots__ = ()

    # ------------------------------------------------------------------ indexing
    def _normalise_index(self: Tensor, item: Any, op: str) -> tuple[list, list[int], list[int | None], list]:
        """Split a Python index into per-dim (start, stop, step) triples with positive steps, the dims to
        flip first (negative steps), the result layout (source dim per result dim, None for a new
        axis; int-indexed dims are dropped) and the int-tensor indices as (layout position, index)."""
        if not isinstance(item, tuple):
            item = (item,)
        shape = self.shape
        n_real = sum(1 for it in item if it is not None and it is not Ellipsis)
        if sum(1 for it in item if it is Ellipsis) > 1:
            raise IndexError(f"{op}: an index can only have a single ellipsis")
        if n_real > len(shape):
            raise IndexError(f"{op}: too many indices ({n_real}) for a tensor of rank {len(shape)}")
        index = _full_index(shape)
        flips: list[int] = []
        layout: list[int | None] = []
        advanced: list[tuple[int, Any]] = []
        dim = 0
        for it in item:
            if it is Ellipsis:
                skip = len(shape) - n_real
                layout.extend(range(dim, dim + skip))
                dim += skip
            elif it is None:
                layout.append(None)
            elif isinstance(it, slice):
                n = shape[dim]
                start, stop, step = it.indices(n)
                count = len(range(start, stop, step))
                if step < 0:  # read the flipped dim with a positive step
                    flips.append(dim)
                    start, step = n - 1 - start, -step
                stop = start + (count - 1) * step + 1 if count else start
                index[dim] = (start, stop, step)
                layout.append(dim)
                dim += 1
            elif isinstance(it, bool):
                raise IndexError(f"{op}: bool indices are not supported; use mask_fill or burn.where")
            elif _is_index_tensor(it):
                advanced.append((len(layout), it))
                layout.append(dim)
                dim += 1
            elif hasattr(it, "__index__"):
                i = it.__index__()
                n = shape[dim]
                if not -n <= i < n:
                    raise IndexOutOfRangeError(f"{op}: index {i} out of range for dim {dim} of size {n}")
                i = i + n if i < 0 else i
                index[dim] = (i, i + 1, 1)
                dim += 1
            else:
                raise TypeError(f"{op}: unsupported index {it!r} (use ints, slices, None, ..., int tensors)")
        layout.extend(range(dim, len(shape)))
        return index, flips, layout, advanced

    def __getitem__(self: Tensor, item: Any) -> Tensor:
        """NumPy-style indexing: ints, slices (any step), ``None``, ``...`` and int tensors (one, or
        several on adjacent dims).

        Shapes: an int drops its dim, a slice keeps it (resized), ``None`` adds a size-1 dim and int
        tensors replace the dims they index by their broadcast shape.

        >>> burn.arange(10)[::-2].tolist()
        [9, 7, 5, 3, 1]
        >>> burn.zeros(2, 3, 4)[0, :, None].shape
        (3, 1, 4)
        >>> burn.arange(6).reshape(2, 3)[:, burn.tensor([2, 0])].tolist()
        [[2, 0], [5, 3]]
        """
        index, flips, layout, advanced = self._normalise_index(item, "index")
        b = self._b
        x = b.flip(self._p, tuple(flips)) if flips else self._p
        if any(t != (0, n, 1) for t, n in zip(index, self.shape)):
            x = b.slice(x, tuple(index))
        sliced = b.shape_of(x)
        final = tuple(1 if d is None else sliced[d] for d in layout)
        out = _w(b.reshape(x, final), b) if final != tuple(sliced) else _w(x, b)
        return out._advanced(advanced) if advanced else out

    def _advanced(self: Tensor, advanced: list[tuple[int, Any]]) -> Tensor:
        """Apply int-tensor indices on adjacent dims: the indexed dims are replaced by the broadcast
        shape of the indices."""

        positions = [p for p, _ in advanced]
        if any(b - a != 1 for a, b in zip(positions, positions[1:])):
            raise IndexError("index: several int-tensor indices must be on adjacent dims")
        shape = self.shape
        bshape: tuple[int, ...] = ()
        idxs = []
        for p, raw in advanced:
            t = _T._as_tensor_like(raw, self, "index")
            _check_index_tensor("index", t, self)
            idxs.append(_checked_index(t, shape[p], "index", "index", p))
            bshape = broadcast_shapes("index", bshape, t.shape, "index/index")
        flat = None
        for (p, _), t in zip(advanced, idxs):
            t = t.expand(*bshape) if t.shape != bshape else t
            flat = t if flat is None else flat * shape[p] + t
        first, last = positions[0], positions[-1]
        merged = 1
        for p in positions:
            merged *= shape[p]
        x = self.reshape(shape[:first] + (merged,) + shape[last + 1 :])
        picked = x.select(first, flat.reshape(-1))  # type: ignore[union-attr]  # advanced is not empty
        return picked.reshape(shape[:first] + bshape + shape[last + 1 :])

    def slice_assign(self: Tensor, index: Any, value: Any) -> Tensor:
        """A copy with ``self[index]`` replaced by ``value`` (a tensor or scalar broadcast to the region).

        Shapes: the result has the tensor's shape; ``value`` broadcasts to the shape of ``self[index]``.

        >>> burn.zeros(4).slice_assign(slice(1, 3), 1.0).tolist()
        [0.0, 1.0, 1.0, 0.0]
        >>> burn.zeros(2, 3, dtype=burn.int64).slice_assign((1, slice(None)), burn.tensor([7, 8, 9])).tolist()
        [[0, 0, 0], [7, 8, 9]]
        """

        idx, flips, layout, advanced = self._normalise_index(index, "slice_assign")
        if advanced:
            raise IndexError(
                "slice_assign: int-tensor indices are not supported; use scatter_add or select_add"
            )
        region = tuple(len(range(s, e, st)) for s, e, st in idx)
        if not isinstance(value, _T.Tensor):
            value = _T._as_tensor_like(value, self, "slice_assign")
        if value._b is not self._b:
            raise DeviceError(f"slice_assign: value is on {value.device}, tensor on {self.device}")
        # value may be shaped like the indexed view (dropped int dims); bring it to the region's rank
        view_shape = tuple(1 if d is None else region[d] for d in layout)
        vshape = value.shape
        try:
            broadcast_shapes("slice_assign", view_shape, vshape, "region/value")
            if broadcast_shapes("slice_assign", view_shape, vshape, "region/value") != view_shape:
                raise ShapeError("")
        except ShapeError:
            raise ShapeError(
                f"slice_assign: value of shape {vshape} does not fit the indexed region of shape {view_shape}"
            ) from None
        v = value.cast(self.dtype).expand(*view_shape).reshape(region)
        b = self._b
        x = self._p
        if flips:
            x = b.flip(x, tuple(flips))
        out = b.slice_assign(x, tuple(idx), v._p)
        if flips:
            out = b.flip(out, tuple(flips))
        return _w(out, b)

    # ------------------------------------------------------------------ index ops
    def gather(self: Tensor, dim: int, index: Tensor) -> Tensor:
        """``out[..., i, ...] = self[..., index[..., i, ...], ...]`` along ``dim``.

        Shapes: ``index`` is an int tensor of the tensor's rank (no larger off ``dim``); the result has
        ``index``'s shape.

        >>> burn.tensor([[1, 2], [3, 4]]).gather(1, burn.tensor([[1, 1], [0, 1]])).tolist()
        [[2, 2], [3, 4]]
        """

        d = norm_dim("gather", dim, self.ndim)
        index = _T._as_tensor_like(index, self, "gather")
        _check_index_tensor("gather", index, self)
        if index.ndim != self.ndim:
            raise ShapeError(
                f"gather: index must have the tensor's rank {self.ndim}, got shape {index.shape}"
            )
        for i, (a, b) in enumerate(zip(index.shape, self.shape)):
            if i != d and a > b:
                raise ShapeError(
                    f"gather: index shape {index.shape} exceeds tensor shape {self.shape} at dim {i}"
                )
        index = _checked_index(index, self.shape[d], "gather", "index", d)
        x = self
        if any(i != d and a != n for i, (a, n) in enumerate(zip(index.shape, self.shape))):
            # PyTorch lets index be smaller than the tensor off ``dim``; backends get equal sizes there
            region = tuple(
                (0, n if i == d else a, 1) for i, (a, n) in enumerate(zip(index.shape, self.shape))
            )
            x = _w(self._b.slice(self._p, region), self._b, self._dt)
        return _w(self._b.gather(x._p, d, index._p), self._b, self._dt)

    def scatter_add(self: Tensor, dim: int, index: Tensor, src: Tensor) -> Tensor:
        """A copy with ``src`` added at ``index`` along ``dim`` (repeated indices accumulate).

        Shapes: ``index`` and ``src`` share one shape of the tensor's rank; the result has the tensor's.

        >>> burn.zeros(3).scatter_add(0, burn.tensor([0, 2, 0]), burn.tensor([1.0, 2.0, 3.0])).tolist()
        [4.0, 0.0, 2.0]
        """

        d = norm_dim("scatter_add", dim, self.ndim)
        index = _T._as_tensor_like(index, self, "scatter_add")
        src = _T._as_tensor_like(src, self, "scatter_add")
        _check_index_tensor("scatter_add", index, self)
        if index.shape != src.shape:
            raise ShapeError(f"scatter_add: index shape {index.shape} must equal src shape {src.shape}")
        if index.ndim != self.ndim:
            raise ShapeError(f"scatter_add: index must have the tensor's rank {self.ndim}, got {index.shape}")
        index = _checked_index(index, self.shape[d], "scatter_add", "index", d)
        return _w(self._b.scatter_add(self._p, d, index._p, src.cast(self.dtype)._p), self._b)

    def select(self: Tensor, dim: int, indices: Any) -> Tensor:
        """Entries along ``dim`` picked by a 1-d int tensor (or list), as ``index_select``.

        Shapes: (..., n, ...) with k indices -> (..., k, ...).

        >>> burn.tensor([[1, 2], [3, 4], [5, 6]]).select(0, [2, 0]).tolist()
        [[5, 6], [1, 2]]
        """

        d = norm_dim("select", dim, self.ndim)
        idx = _T._as_tensor_like(indices, self, "select")
        _check_index_tensor("select", idx, self)
        if idx.ndim != 1:
            raise ShapeError(f"select: indices must be 1-d, got shape {idx.shape}")
        idx = _checked_index(idx, self.shape[d], "select", "indices", d)
        return _w(self._b.select(self._p, d, idx._p), self._b)

    index_select = select

    def select_add(self: Tensor, dim: int, indices: Any, values: Tensor) -> Tensor:
        """A copy with ``values`` added at ``indices`` along ``dim`` (repeats accumulate).

        Shapes: tensor (..., n, ...), k indices, values (..., k, ...) -> (..., n, ...).

        >>> burn.zeros(3, 2).select_add(0, [0, 0], burn.ones((2, 2))).tolist()
        [[2.0, 2.0], [0.0, 0.0], [0.0, 0.0]]
        """

        d = norm_dim("select_add", dim, self.ndim)
        idx = _T._as_tensor_like(indices, self, "select_add")
        _check_index_tensor("select_add", idx, self)
        values = _T._as_tensor_like(values, self, "select_add")
        expected = self.shape[:d] + (idx.numel(),) + self.shape[d + 1 :]
        if values.shape != expected:
            raise ShapeError(f"select_add: values shape {values.shape} != expected {expected}")
        idx = _checked_index(idx, self.shape[d], "select_add", "indices", d)
        return _w(self._b.select_add(self._p, d, idx._p, values.cast(self.dtype)._p), self._b)

    def mask_fill(self: Tensor, mask: Tensor, value: Any) -> Tensor:
        """``value`` where ``mask`` is true (mask broadcasts to the tensor's shape, which the result keeps).

        >>> burn.tensor([1, 2, 3]).mask_fill(burn.tensor([True, False, True]), 0).tolist()
        [0, 2, 0]
        """

        mask = _T._as_tensor_like(mask, self, "mask_fill")
        if not mask.dtype.is_bool:
            raise DTypeError(f"mask_fill: mask must be bool, got {mask.dtype}")
        if broadcast_shapes("mask_fill", self.shape, mask.shape, "tensor/mask") != self.shape:
            raise ShapeError(
                f"mask_fill: mask shape {mask.shape} does not broadcast to tensor shape {self.shape}"
            )

        x = self.float() if isinstance(value, float) and not self.dtype.is_float else self
        return _w(x._b.mask_fill(x._p, mask._p, _T._scalar_for(x.dtype, value)), x._b)

    masked_fill = mask_fill

    def one_hot(self: Tensor, num_classes: int, dtype: Any = None) -> Tensor:
        """One-hot encoding of an int tensor: (...) -> (..., num_classes), default-int dtype.

        >>> burn.tensor([0, 2]).one_hot(3).tolist()
        [[1, 0, 0], [0, 0, 1]]
        """
        if not self.dtype.is_int:
            raise DTypeError(f"one_hot: expected an integer tensor, got {self.dtype}")
        if not isinstance(num_classes, int) or num_classes <= 0:
            raise ValueError(f"one_hot: num_classes must be a positive int, got {num_classes!r}")
        dt = self._b.default_int if dtype is None else D.dtype(dtype)
        _T._check_supported("one_hot", self._b, dt)
        x = self._p
        if self.numel():  # at once on host backends, at the next read on device backends
            message = (
                f"one_hot: class index {{value}} out of range for num_classes={num_classes} "
                f"(expected 0..{num_classes - 1})"
            )
            x = self._b.check_index(x, num_classes, False, message)
        return _w(self._b.one_hot(x, num_classes, dt), self._b, dt)


def _check_index_tensor(op: str, index: Tensor, x: Tensor) -> None:
    if index._b is not x._b:
        raise DeviceError(f"{op}: index is on {index.device}, tensor on {x.device}")
    if not index.dtype.is_int:
        raise DTypeError(f"{op}: index must be an integer tensor, got {index.dtype}")


def _checked_index(index: Tensor, size: int, op: str, arg: str, dim: int) -> Tensor:
    """Index values checked against ``[-size, size)``, negatives wrapped (``Backend.check_index``:
    at once on host backends, at the next read or sync on device backends)."""
    if index.numel() == 0:
        return index
    message = f"{op}: {arg} value {{value}} out of range for dim {dim} of size {size}"
    return _w(index._b.check_index(index._p, size, True, message), index._b, index.dtype)
