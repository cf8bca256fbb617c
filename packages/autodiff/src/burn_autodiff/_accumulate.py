"""Gradient accumulation per node, with the gradients of slices and gathers kept until they are read.

A slice's backward returns a ``Window`` (its output gradient and where it sits in the input) instead of
a zero tensor of the input's shape with the gradient written into it; a gather's (select, embedding,
sort) returns a ``ScatterAdd`` instead of scattering into a zero tensor. The engine gathers them per
parent and writes them when the parent's gradient is first read (``resolve``). Windows:

- one window: one ``pad`` (zeros around it), or the gradient itself when it covers the parent;
- windows that tile the parent along one dim (split, chunk, narrow of the pieces of a fused QKV
  projection): one ``cat`` of the window gradients, with zero pieces only where no window lies;
- anything else (strided windows, windows cut in several dims, overlaps): written into one zero buffer.

Dense gradients of the same parent (it is used by other ops as well) are summed in as before, and the
scatter-adds then add into that sum (a tied embedding: the head's matmul gradient plus the lookup's
rows, without a zero table and a full-size add).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from burn.backend import Slices

from ._rule import Prim, unbroadcast, zeros

if TYPE_CHECKING:
    from burn.backend import Backend


class Window:
    """The gradient ``g`` of a slice: it belongs at ``index`` in a zero tensor of the input's shape."""

    __slots__ = ("index", "g")

    def __init__(self, index: Slices, g: Prim) -> None:
        self.index = index
        self.g = g


class ScatterAdd:
    """The gradient of a gather-like op: ``op`` ("select_add" or "scatter_add") adds ``g`` along ``dim``
    at ``index`` into the input's gradient."""

    __slots__ = ("op", "dim", "index", "g")

    def __init__(self, op: str, dim: int, index: Prim, g: Prim) -> None:
        self.op, self.dim, self.index, self.g = op, dim, index, g


class Pending:
    """A node's gradient so far: windows and scatter-adds not yet written, the sum of its dense ones."""

    __slots__ = ("windows", "scatters", "dense")

    def __init__(self, dense: Prim | None) -> None:
        self.windows: list[Window] = []
        self.scatters: list[ScatterAdd] = []
        self.dense = dense


def _covers(index: Slices, shape: tuple[int, ...]) -> bool:
    return all(a == 0 and b == n and (s == 1 or n <= 1) for (a, b, s), n in zip(index, shape))


def accumulate(
    B: Backend, prev: Prim | Pending | None, pg: Prim | Window | ScatterAdd, shape: tuple[int, ...]
) -> Prim | Pending:
    """``prev`` (the node's gradient so far) plus ``pg``, one more input gradient from a consumer."""
    if type(pg) is Window and _covers(pg.index, shape):
        pg = pg.g
    if isinstance(pg, Window):
        acc = prev if type(prev) is Pending else Pending(prev)
        acc.windows.append(pg)
        return acc
    if isinstance(pg, ScatterAdd):
        acc = prev if type(prev) is Pending else Pending(prev)
        acc.scatters.append(pg)
        return acc
    if tuple(B.shape_of(pg)) != shape:
        pg = unbroadcast(B, pg, shape)
    if prev is None:
        return pg
    if type(prev) is Pending:
        prev.dense = pg if prev.dense is None else B.binary("add", prev.dense, pg)
        return prev
    return B.binary("add", prev, pg)


def resolve(B: Backend, acc: Prim | Pending, shape: tuple[int, ...]) -> Prim:
    """The node's gradient as one primitive of ``shape``."""
    if type(acc) is not Pending:
        return acc
    out = acc.dense
    if acc.windows:
        written = _windows(B, acc.windows, shape)
        out = written if out is None else B.binary("add", out, written)
    for s in acc.scatters:
        out = getattr(B, s.op)(zeros(B, shape, s.g) if out is None else out, s.dim, s.index, s.g)
    assert out is not None  # a Pending holds at least one window or scatter-add
    return out


def _windows(B: Backend, windows: list[Window], shape: tuple[int, ...]) -> Prim:
    like = windows[0].g
    windows = [w for w in windows if all(b > a for a, b, _ in w.index)]  # empty slices add nothing
    if not windows:
        return zeros(B, shape, like)
    if len(windows) == 1 and all(s == 1 for _, _, s in windows[0].index):
        w = windows[0]
        return B.pad(w.g, tuple((a, n - b) for (a, b, _), n in zip(w.index, shape)), "constant", 0.0)
    dim = _tiling_dim(windows, shape)
    return _write_all(B, windows, shape, like) if dim is None else _cat_along(B, windows, shape, dim, like)


def _tiling_dim(windows: list[Window], shape: tuple[int, ...]) -> int | None:
    """The one dim all windows are cut in (full and unstrided in every other), when they do not overlap."""
    dim = None
    for w in windows:
        for d, ((a, b, s), n) in enumerate(zip(w.index, shape)):
            if s != 1:
                return None
            if (a, b) != (0, n):
                if dim is not None and d != dim:
                    return None
                dim = d
    if dim is None:
        return None
    spans = sorted(w.index[dim][:2] for w in windows)
    if any(spans[i][1] > spans[i + 1][0] for i in range(len(spans) - 1)):
        return None
    return dim


def _cat_along(B: Backend, windows: list[Window], shape: tuple[int, ...], dim: int, like: Prim) -> Prim:
    def gap(n: int) -> Prim:
        return zeros(B, shape[:dim] + (n,) + shape[dim + 1 :], like)

    pieces, at = [], 0
    for w in sorted(windows, key=lambda w: w.index[dim][0]):
        a, b, _ = w.index[dim]
        if a > at:
            pieces.append(gap(a - at))
        pieces.append(w.g)
        at = b
    if at < shape[dim]:
        pieces.append(gap(shape[dim] - at))
    return B.cat(pieces, dim)


def _write_all(B: Backend, windows: list[Window], shape: tuple[int, ...], like: Prim) -> Prim:
    """Every window written into one zero buffer; a window meeting an earlier one's box adds to it."""
    buf = zeros(B, shape, like)
    boxes: list[Slices] = []
    for w in windows:
        meets = any(all(a < d and c < b for (a, b, _), (c, d, _) in zip(w.index, box)) for box in boxes)
        value = B.binary("add", B.slice(buf, w.index), w.g) if meets else w.g
        buf = B.slice_assign(buf, w.index, value)
        boxes.append(w.index)
    return buf
