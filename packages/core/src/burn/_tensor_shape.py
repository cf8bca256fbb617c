"""Shape, indexing, sorting and padding ops of ``burn.Tensor`` (a mixin of the Tensor class)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from . import _dtype as D
from . import _tensor as _T
from ._checks import broadcast_shapes, infer_reshape, norm_dim, norm_dims, shape_arg
from ._errors import DeviceError, DTypeError, IndexOutOfRangeError, ShapeError

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


class ShapeOps:
    __slots__ = ()

    # ------------------------------------------------------------------ reshaping
    def reshape(self, *shape: Any) -> Tensor:
        """A tensor with the same values in a new shape; one entry may be -1.

        >>> burn.arange(6).reshape(2, -1).shape
        (2, 3)
        """
        new = infer_reshape("reshape", self.shape, shape_arg("reshape", shape))
        if new == self.shape:
            return self
        return _w(self._b.reshape(self._p, new), self._b)

    view = reshape

    def permute(self, *dims: Any) -> Tensor:
        dims = shape_arg("permute", dims, "dims")
        n = self.ndim
        if len(dims) != n:
            raise ShapeError(f"permute: dims {dims} must name each of the {n} dims once")
        norm = tuple(norm_dim("permute", d, n, "dims") for d in dims)
        if sorted(norm) != list(range(n)):
            raise ShapeError(f"permute: dims {dims} must be a permutation of 0..{n - 1}")
        return _w(self._b.permute(self._p, norm), self._b)

    def transpose(self, dim0: int = -2, dim1: int = -1) -> Tensor:
        """Swap two dims (the last two by default)."""
        n = self.ndim
        a, b = norm_dim("transpose", dim0, n, "dim0"), norm_dim("transpose", dim1, n, "dim1")
        order = list(range(n))
        order[a], order[b] = order[b], order[a]
        return _w(self._b.permute(self._p, tuple(order)), self._b)

    swap_dims = transpose

    @property
    def T(self) -> Tensor:
        return self.permute(*reversed(range(self.ndim)))

    def flatten(self, start_dim: int = 0, end_dim: int = -1) -> Tensor:
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

    def unsqueeze(self, dim: int = 0) -> Tensor:
        shape = list(self.shape)
        d = norm_dim("unsqueeze", dim, len(shape) + 1)
        shape.insert(d, 1)
        return _w(self._b.reshape(self._p, tuple(shape)), self._b)

    def squeeze(self, dim: int | Sequence[int] | None = None) -> Tensor:
        """Drop size-1 dims: all of them, or the given ones (which must have size 1)."""
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

    def expand(self, *shape: Any) -> Tensor:
        """Broadcast to ``shape`` without copying; -1 keeps a dim, new dims go in front."""
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

    def broadcast_to(self, *shape: Any) -> Tensor:
        return self.expand(*shape)

    def repeat(self, *reps: Any) -> Tensor:
        """Tile the tensor ``reps[d]`` times along each dim (extra reps add leading dims)."""
        reps = shape_arg("repeat", reps, "reps")
        if len(reps) < self.ndim:
            raise ShapeError(f"repeat: need at least {self.ndim} repeats for shape {self.shape}, got {reps}")
        x = self.reshape((1,) * (len(reps) - self.ndim) + self.shape)
        return _w(self._b.repeat(x._p, reps), self._b)

    def repeat_dim(self, dim: int, times: int) -> Tensor:
        reps = [1] * self.ndim
        reps[norm_dim("repeat_dim", dim, self.ndim)] = times
        return self.repeat(*reps)

    def flip(self, dims: int | Sequence[int]) -> Tensor:
        d = norm_dims("flip", dims, self.ndim, "dims")
        return _w(self._b.flip(self._p, d), self._b) if d else self

    def narrow(self, dim: int, start: int, length: int) -> Tensor:
        """``length`` entries of ``dim`` from ``start``."""
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

    # ------------------------------------------------------------------ indexing
    def _normalise_index(self, item: Any, op: str) -> tuple[list, list[int], list[int | None], list]:
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

    def __getitem__(self, item: Any) -> Tensor:
        """NumPy-style indexing: ints, slices (any step), ``None``, ``...`` and int tensors (one, or
        several on adjacent dims).

        >>> burn.arange(10)[::-2].tolist()
        [9, 7, 5, 3, 1]
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

    def _advanced(self, advanced: list[tuple[int, Any]]) -> Tensor:
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
            idxs.append(_checked_index(t, shape[p], "index", f"index for dim {p}"))
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
        picked = x.select(first, flat.reshape(-1))
        return picked.reshape(shape[:first] + bshape + shape[last + 1 :])

    def slice_assign(self, index: Any, value: Any) -> Tensor:
        """A copy with ``self[index]`` replaced by ``value`` (a tensor or scalar broadcast to the region).

        >>> burn.zeros(4).slice_assign(slice(1, 3), 1.0).tolist()
        [0.0, 1.0, 1.0, 0.0]
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

    # ------------------------------------------------------------------ joining and splitting
    def split(self, split_size_or_sections: int | Sequence[int], dim: int = 0) -> list[Tensor]:
        """Split into chunks of ``split_size`` (the last may be smaller) or of the given sizes."""
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

    def chunk(self, chunks: int, dim: int = 0) -> list[Tensor]:
        """Split into at most ``chunks`` pieces of equal size (the last may be smaller), as PyTorch."""
        if not isinstance(chunks, int) or chunks <= 0:
            raise ValueError(f"chunk: chunks must be a positive int, got {chunks!r}")
        d = norm_dim("chunk", dim, self.ndim)
        n = self.shape[d]
        size = max(-(-n // chunks), 1)
        return self.split(size, d)

    # ------------------------------------------------------------------ index ops
    def gather(self, dim: int, index: Tensor) -> Tensor:
        """``out[..., i, ...] = self[..., index[..., i, ...], ...]`` along ``dim``."""

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
        index = _checked_index(index, self.shape[d], "gather", "index")
        x = self
        if any(i != d and a != n for i, (a, n) in enumerate(zip(index.shape, self.shape))):
            # PyTorch lets index be smaller than the tensor off ``dim``; backends get equal sizes there
            region = tuple(
                (0, n if i == d else a, 1) for i, (a, n) in enumerate(zip(index.shape, self.shape))
            )
            x = _w(self._b.slice(self._p, region), self._b, self._dt)
        return _w(self._b.gather(x._p, d, index._p), self._b, self._dt)

    def scatter_add(self, dim: int, index: Tensor, src: Tensor) -> Tensor:
        """A copy with ``src`` added at ``index`` along ``dim`` (repeated indices accumulate)."""

        d = norm_dim("scatter_add", dim, self.ndim)
        index = _T._as_tensor_like(index, self, "scatter_add")
        src = _T._as_tensor_like(src, self, "scatter_add")
        _check_index_tensor("scatter_add", index, self)
        if index.shape != src.shape:
            raise ShapeError(f"scatter_add: index shape {index.shape} must equal src shape {src.shape}")
        if index.ndim != self.ndim:
            raise ShapeError(f"scatter_add: index must have the tensor's rank {self.ndim}, got {index.shape}")
        index = _checked_index(index, self.shape[d], "scatter_add", "index")
        return _w(self._b.scatter_add(self._p, d, index._p, src.cast(self.dtype)._p), self._b)

    def select(self, dim: int, indices: Any) -> Tensor:
        """Entries along ``dim`` picked by a 1-d int tensor (or list), as ``index_select``."""

        d = norm_dim("select", dim, self.ndim)
        idx = _T._as_tensor_like(indices, self, "select")
        _check_index_tensor("select", idx, self)
        if idx.ndim != 1:
            raise ShapeError(f"select: indices must be 1-d, got shape {idx.shape}")
        idx = _checked_index(idx, self.shape[d], "select", "indices")
        return _w(self._b.select(self._p, d, idx._p), self._b)

    index_select = select

    def select_add(self, dim: int, indices: Any, values: Tensor) -> Tensor:
        """A copy with ``values`` added at ``indices`` along ``dim`` (repeats accumulate)."""

        d = norm_dim("select_add", dim, self.ndim)
        idx = _T._as_tensor_like(indices, self, "select_add")
        _check_index_tensor("select_add", idx, self)
        values = _T._as_tensor_like(values, self, "select_add")
        expected = self.shape[:d] + (idx.numel(),) + self.shape[d + 1 :]
        if values.shape != expected:
            raise ShapeError(f"select_add: values shape {values.shape} != expected {expected}")
        idx = _checked_index(idx, self.shape[d], "select_add", "indices")
        return _w(self._b.select_add(self._p, d, idx._p, values.cast(self.dtype)._p), self._b)

    def mask_fill(self, mask: Tensor, value: Any) -> Tensor:
        """``value`` where ``mask`` is true (mask broadcasts to the tensor's shape)."""

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

    def one_hot(self, num_classes: int, dtype: Any = None) -> Tensor:
        """One-hot encoding of an int tensor: shape + (num_classes,), default-int dtype."""
        if not self.dtype.is_int:
            raise DTypeError(f"one_hot: expected an integer tensor, got {self.dtype}")
        if not isinstance(num_classes, int) or num_classes <= 0:
            raise ValueError(f"one_hot: num_classes must be a positive int, got {num_classes!r}")
        if self.numel():
            lo, hi = int(self.min().item()), int(self.max().item())
            if lo < 0 or hi >= num_classes:
                bad = lo if lo < 0 else hi
                raise IndexOutOfRangeError(
                    f"one_hot: class index {bad} out of range for num_classes={num_classes} "
                    f"(expected 0..{num_classes - 1})"
                )
        dt = self._b.default_int if dtype is None else D.dtype(dtype)
        _T._check_supported("one_hot", self._b, dt)
        return _w(self._b.one_hot(self._p, num_classes, dt), self._b, dt)

    def tril(self, diagonal: int = 0) -> Tensor:
        """Keep the lower triangle (the last two dims), zero above ``diagonal``."""
        if self.ndim < 2:
            raise ShapeError(f"tril: needs at least 2 dims, got shape {self.shape}")
        return _w(self._b.tril(self._p, diagonal), self._b)

    def triu(self, diagonal: int = 0) -> Tensor:
        if self.ndim < 2:
            raise ShapeError(f"triu: needs at least 2 dims, got shape {self.shape}")
        return _w(self._b.triu(self._p, diagonal), self._b)

    # ------------------------------------------------------------------ sorting and scans
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

    # ------------------------------------------------------------------ padding
    def pad(self, pads: Sequence[int], mode: str = "constant", value: float = 0.0) -> Tensor:
        """Pad as PyTorch's ``F.pad``: ``pads = (last_left, last_right, prev_left, prev_right, ...)``.

        ``mode``: "constant" (fill with ``value``), "reflect" (mirror, edge not repeated; pads must be
        smaller than the dim) or "edge" (repeat the edge value; also called "replicate").
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


def _check_index_tensor(op: str, index: Tensor, x: Tensor) -> None:
    if index._b is not x._b:
        raise DeviceError(f"{op}: index is on {index.device}, tensor on {x.device}")
    if not index.dtype.is_int:
        raise DTypeError(f"{op}: index must be an integer tensor, got {index.dtype}")


def _checked_index(index: Tensor, size: int, op: str, arg: str) -> Tensor:
    """Check index values lie in ``[-size, size)`` where the check is cheap (host backends); negative
    indices count from the end."""
    if index.numel() == 0:
        return index
    b = index._b
    if getattr(b.inner if b.is_autodiff else b, "host_memory", False):
        import numpy as np

        arr = np.asarray(index._inner_prim())
        lo, hi = int(arr.min()), int(arr.max())
        if lo < -size or hi >= size:
            bad = lo if lo < -size else hi
            raise IndexOutOfRangeError(f"{op}: {arg} value {bad} out of range for a dim of size {size}")
        if lo < 0:
            return index.remainder(size) if index.dtype.kind == "i" else index
    return index
