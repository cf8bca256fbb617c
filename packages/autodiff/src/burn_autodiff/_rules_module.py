"""Backward rules of the module ops: conv and conv_transpose (any rank, stride, padding, dilation,
groups), max pools (scatter through the indices), and the linear resampling ops (avg pools, adaptive
avg pools, interpolate) through their transposed per-dim matrices.

conv: the input gradient is a transposed conv of the output gradient; the weight gradient is the
backend's ``conv_weight_grad`` (by default one matmul of the output gradient with the input's windows
per group; burn-cuda runs cuDNN's where it has it).
"""

from __future__ import annotations

from collections.abc import Callable
from math import prod
from typing import TYPE_CHECKING, Any

from burn.backend import conv_transpose_out_sizes

from ._rule import Ctx, Grads, Prim, Rule, zeros

if TYPE_CHECKING:
    from burn.backend import Backend

# apply_1d(B, e, i): the op with identity on every spatial dim but dim i
Apply1d = Callable[["Backend", Prim, int], Prim]


def _bias_grad(B: Backend, g: Prim) -> Prim:
    nd = len(B.shape_of(g))
    return B.reduce("sum", g, (0,) + tuple(range(2, nd)), False)


def _conv_fwd(B: Backend, m: tuple[Any, ...], x: Prim, w: Prim, bias: Prim | None) -> Prim:
    return B.conv(x, w, bias, *m)


def _conv_b(B: Backend, g: Prim, c: Ctx) -> Grads:
    stride, padding, dilation, groups = c.meta
    xshape, wshape = c.in_shape(0), c.in_shape(1)
    gx = gw = gb = None
    if c.needs(0):
        out_sizes = B.shape_of(g)[2:]
        # the remainder the forward's floor division dropped, restored as output padding
        no_pad = (0,) * len(out_sizes)
        grown = conv_transpose_out_sizes(out_sizes, wshape[2:], stride, padding, no_pad, dilation)
        out_pad = tuple(s - n for s, n in zip(xshape[2:], grown))
        gx = B.conv_transpose(g, c.x(1), None, stride, padding, out_pad, dilation, groups)
    if c.needs(1):
        gw = B.conv_weight_grad(c.x(0), g, wshape, stride, padding, dilation, groups)
    if c.needs(2):
        gb = _bias_grad(B, g)
    return gx, gw, gb


def _conv_transpose_fwd(B: Backend, m: tuple[Any, ...], x: Prim, w: Prim, bias: Prim | None) -> Prim:
    return B.conv_transpose(x, w, bias, *m)


def _conv_transpose_b(B: Backend, g: Prim, c: Ctx) -> Grads:
    stride, padding, _out_pad, dilation, groups = c.meta
    xshape, wshape = c.in_shape(0), c.in_shape(1)
    gx = gw = gb = None
    if c.needs(0):
        gx = B.conv(g, c.x(1), None, stride, padding, dilation, groups)
        if tuple(B.shape_of(gx)) != tuple(xshape):  # output_padding >= stride adds a partial window
            gx = B.slice(gx, tuple((0, n, 1) for n in xshape))
    if c.needs(1):
        # conv_transpose(x, w) is the adjoint of conv(., w): swap the roles of input and gradient
        gw = B.conv_weight_grad(g, c.x(0), wshape, stride, padding, dilation, groups)
    if c.needs(2):
        gb = _bias_grad(B, g)
    return gx, gw, gb


def _max_pool_b(B: Backend, g: Prim, c: Ctx) -> Grads:
    shape = c.in_shape(0)
    n, ch = shape[0], shape[1]
    flat = (n, ch, prod(shape[2:]))
    idx = B.reshape(c.extras[0], (n, ch, -1))
    gx = B.scatter_add(zeros(B, flat, g), 2, idx, B.reshape(g, (n, ch, -1)))
    return (B.reshape(gx, shape),)


# ---------------------------------------------------------------- separable linear resampling
def _separable_adjoint(B: Backend, g: Prim, in_shape: tuple[int, ...], apply_1d: Apply1d) -> Prim:
    """Transpose of a linear op acting on each spatial dim independently (avg pools, interpolate).

    Each dim's matrix is read off by running the op on an identity: input (1, S, 1, .., S, .., 1)
    holding eye(S), with the op set to identity on the other dims, gives M^T (S, O)."""
    nd = len(in_shape)
    dtype = B.dtype_of(g)
    for d in range(2, nd):
        size = in_shape[d]
        eye = B.one_hot(B.arange(0, size, 1, B.default_int), size, dtype)
        probe = B.reshape(eye, (1, size) + tuple(size if k == d else 1 for k in range(2, nd)))
        m_t = B.reshape(apply_1d(B, probe, d - 2), (size, -1))  # (S, O)
        perm = tuple(k for k in range(nd) if k != d) + (d,)
        gp = B.permute(g, perm)
        lead = tuple(B.shape_of(gp)[:-1])
        out = B.matmul(B.reshape(gp, (-1, B.shape_of(gp)[-1])), B.permute(m_t, (1, 0)))
        out = B.reshape(out, lead + (size,))
        g = B.permute(out, tuple(perm.index(k) for k in range(nd)))
    return g


def _only(values: tuple[int, ...], i: int, rest: int) -> tuple[int, ...]:
    return tuple(v if j == i else rest for j, v in enumerate(values))


def _avg_pool_b(B: Backend, g: Prim, c: Ctx) -> Grads:
    kernel, stride, padding, include_pad, ceil_mode = c.meta

    def apply_1d(B: Backend, e: Prim, i: int) -> Prim:
        return B.avg_pool(
            e, _only(kernel, i, 1), _only(stride, i, 1), _only(padding, i, 0), include_pad, ceil_mode
        )

    return (_separable_adjoint(B, g, c.in_shape(0), apply_1d),)


def _adaptive_avg_pool_b(B: Backend, g: Prim, c: Ctx) -> Grads:
    size = c.meta
    return (
        _separable_adjoint(B, g, c.in_shape(0), lambda B, e, i: B.adaptive_avg_pool(e, _only(size, i, 1))),
    )


def _interpolate_b(B: Backend, g: Prim, c: Ctx) -> Grads:
    size, mode, align = c.meta

    def apply_1d(B: Backend, e: Prim, i: int) -> Prim:
        return B.interpolate(e, _only(size, i, 1), mode, align)

    return (_separable_adjoint(B, g, c.in_shape(0), apply_1d),)


# the input's gradient reads the weight, the weight's reads the input, the bias's neither
_CONV_READS = ((1,), (0,), ())

ROWS = [
    Rule("conv", _conv_fwd, _conv_b, save_for=_CONV_READS, memory_bound=False),
    Rule("conv_transpose", _conv_transpose_fwd, _conv_transpose_b, save_for=_CONV_READS, memory_bound=False),
    Rule("max_pool", lambda B, m, x: B.max_pool(x, *m), _max_pool_b, memory_bound=False, multi=True),
    Rule(
        "adaptive_max_pool",
        lambda B, s, x: B.adaptive_max_pool(x, s),
        _max_pool_b,
        memory_bound=False,
        multi=True,
    ),
    Rule("avg_pool", lambda B, m, x: B.avg_pool(x, *m), _avg_pool_b),
    Rule("adaptive_avg_pool", lambda B, s, x: B.adaptive_avg_pool(x, s), _adaptive_avg_pool_b),
    Rule("interpolate", lambda B, m, x: B.interpolate(x, *m), _interpolate_b),
]
