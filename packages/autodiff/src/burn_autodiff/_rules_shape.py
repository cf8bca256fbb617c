"""Backward rules of the shape ops: reshape, permute, expand, slice, slice_assign, cat, stack, flip,
repeat, pad (constant, reflect, edge), tril and triu. All are memory-bound and read no values, only
shapes: their gradients move the output gradient back into the input's layout. A slice's gradient is
a ``Window`` that the engine gathers with the other slices of the same input (``_accumulate``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._accumulate import Window
from ._rule import Ctx, Grads, Prim, Rule, full_index, int_prim, zeros

if TYPE_CHECKING:
    from burn.backend import Backend


def _reshape_b(B: Backend, g: Prim, c: Ctx) -> Grads:
    return (B.reshape(g, c.in_shape(0)),)


def _permute_b(B: Backend, g: Prim, c: Ctx) -> Grads:
    dims = c.meta
    inverse = tuple(dims.index(i) for i in range(len(dims)))
    return (B.permute(g, inverse),)


def _expand_b(B: Backend, g: Prim, c: Ctx) -> Grads:
    return (g,)  # the engine sums the stretched dims back (unbroadcast)


def _slice_b(B: Backend, g: Prim, c: Ctx) -> Grads:
    # a window, not a zero tensor with g written in: the engine writes all windows of the input at once
    return (Window(c.meta, g),)


def _slice_assign_b(B: Backend, g: Prim, c: Ctx) -> Grads:
    index = c.meta
    gx = B.slice_assign(g, index, zeros(B, c.in_shape(1), g)) if c.needs(0) else None
    gv = B.slice(g, index) if c.needs(1) else None
    return gx, gv


def _cat_b(B: Backend, g: Prim, c: Ctx) -> Grads:
    dim = c.meta
    gshape = c.shape
    out, start = [], 0
    for i in range(len(c.node.in_shapes)):
        n = c.in_shape(i)[dim]
        if c.needs(i):
            index = full_index(gshape)
            index[dim] = (start, start + n, 1)
            out.append(B.slice(g, tuple(index)))
        else:
            out.append(None)
        start += n
    return out


def _stack_b(B: Backend, g: Prim, c: Ctx) -> Grads:
    dim = c.meta
    gshape = c.shape
    out = []
    for i in range(len(c.node.in_shapes)):
        if c.needs(i):
            index = full_index(gshape)
            index[dim] = (i, i + 1, 1)
            out.append(B.reshape(B.slice(g, tuple(index)), c.in_shape(i)))
        else:
            out.append(None)
    return out


def _flip_b(B: Backend, g: Prim, c: Ctx) -> Grads:
    return (B.flip(g, c.meta),)


def _repeat_b(B: Backend, g: Prim, c: Ctx) -> Grads:
    shape = c.in_shape(0)
    reps = c.meta
    inter = []
    for size, r in zip(shape, reps):
        inter += [r, size]
    summed = B.reduce("sum", B.reshape(g, tuple(inter)), tuple(range(0, 2 * len(shape), 2)), False)
    return (B.reshape(summed, shape),)


def _pad_source_index(n: int, before: int, after: int, mode: str) -> list[int]:
    """For each position of a padded dim, the input position its value comes from."""
    if mode == "reflect":
        head = list(range(before, 0, -1))
        tail = list(range(n - 2, n - 2 - after, -1))
    else:  # edge
        head, tail = [0] * before, [n - 1] * after
    return head + list(range(n)) + tail


def _pad_b(B: Backend, g: Prim, c: Ctx) -> Grads:
    pads, mode, _value = c.meta
    shape = c.in_shape(0)
    if mode == "constant":
        index = tuple((a, a + n, 1) for n, (a, _) in zip(shape, pads))
        return (B.slice(g, index),)
    # reflect/edge pad is a select along each padded dim; its adjoint is select_add of the gradient
    for dim in reversed(range(len(shape))):
        before, after = pads[dim]
        if not before and not after:
            continue
        src = int_prim(B, _pad_source_index(shape[dim], before, after, mode))
        target = tuple(shape[dim] if d == dim else s for d, s in enumerate(B.shape_of(g)))
        g = B.select_add(zeros(B, target, g), dim, src, g)
    return (g,)


ROWS = [
    Rule("reshape", lambda B, s, x: B.reshape(x, s), _reshape_b),
    Rule("permute", lambda B, d, x: B.permute(x, d), _permute_b),
    Rule("expand", lambda B, s, x: B.expand(x, s), _expand_b),
    Rule("slice", lambda B, i, x: B.slice(x, i), _slice_b),
    Rule("slice_assign", lambda B, i, x, v: B.slice_assign(x, i, v), _slice_assign_b),
    Rule("cat", lambda B, d, *xs: B.cat(list(xs), d), _cat_b),
    Rule("stack", lambda B, d, *xs: B.stack(list(xs), d), _stack_b),
    Rule("flip", lambda B, d, x: B.flip(x, d), _flip_b),
    Rule("repeat", lambda B, r, x: B.repeat(x, r), _repeat_b),
    Rule("pad", lambda B, m, x: B.pad(x, m[0], m[1], m[2]), _pad_b),
    Rule("tril", lambda B, k, x: B.tril(x, k), lambda B, g, c: (B.tril(g, c.meta),)),
    Rule("triu", lambda B, k, x: B.triu(x, k), lambda B, g, c: (B.triu(g, c.meta),)),
]
