"""Backward rules of reductions (sum, mean, prod, max, min, var), scans (cumsum, cumprod) and matmul.

Reduced gradients are broadcast back over the reduced dims; max/min split the gradient evenly between
tied maxima (PyTorch's amax rule); prod uses exclusive products so zeros in the input are exact."""

from __future__ import annotations

from typing import TYPE_CHECKING

from burn.backend import reduced_shape

from ._rule import Ctx, Forward, Grads, Prim, Rule, expand_back, full_index

if TYPE_CHECKING:
    from burn.backend import Backend


def _reduce_fwd(op: str) -> Forward:
    def forward(B: Backend, m: tuple[tuple[int, ...], bool], x: Prim) -> Prim:
        return B.reduce(op, x, m[0], m[1])

    return forward


def _count(shape: tuple[int, ...], dims: tuple[int, ...]) -> int:
    n = 1
    for d in dims:
        n *= shape[d]
    return n


def _sum_b(B: Backend, g: Prim, c: Ctx) -> Grads:
    dims, keepdim = c.meta
    return (expand_back(B, g, c.in_shape(0), dims, keepdim),)


def _mean_b(B: Backend, g: Prim, c: Ctx) -> Grads:
    dims, keepdim = c.meta
    shape = c.in_shape(0)
    return (B.binary("div", expand_back(B, g, shape, dims, keepdim), float(_count(shape, dims))),)


def _extreme_b(B: Backend, g: Prim, c: Ctx) -> Grads:
    dims, keepdim = c.meta
    shape = c.in_shape(0)
    x = c.x(0)
    hit = B.cast(B.binary("eq", x, expand_back(B, c.out(), shape, dims, keepdim)), B.dtype_of(x))
    ties = B.reduce("sum", hit, dims, True)
    share = B.binary("div", expand_back(B, g, shape, dims, keepdim), B.expand(ties, shape))
    return (B.binary("mul", hit, share),)


def _exclusive_cumprod(B: Backend, x: Prim, dim: int, n: int) -> Prim:
    """Products of the entries before each position along ``dim`` (1 for the first)."""
    shape = tuple(B.shape_of(x))
    ones = B.full(reduced_shape(shape, (dim,), True), 1.0, B.dtype_of(x))
    if n == 1:
        return ones
    head = full_index(shape)
    head[dim] = (0, n - 1, 1)
    return B.cat([ones, B.slice(B.cumprod(x, dim), tuple(head))], dim)


def _prod_b(B: Backend, g: Prim, c: Ctx) -> Grads:
    dims, keepdim = c.meta
    shape = c.in_shape(0)
    x = c.x(0)
    keep = [i for i in range(len(shape)) if i not in dims]
    perm = tuple(keep) + tuple(dims)
    kshape = tuple(shape[i] for i in keep)
    n = _count(shape, dims)
    if n == 0:
        return (B.full(shape, 0.0, B.dtype_of(x)),)
    flat = B.reshape(B.permute(x, perm), kshape + (n,))
    last = len(kshape)
    left = _exclusive_cumprod(B, flat, last, n)
    right = B.flip(_exclusive_cumprod(B, B.flip(flat, (last,)), last, n), (last,))
    gk = B.reshape(g, kshape + (1,))
    grad = B.binary("mul", B.binary("mul", left, right), gk)
    grad = B.reshape(grad, kshape + tuple(shape[d] for d in dims))
    inverse = tuple(perm.index(i) for i in range(len(shape)))
    return (B.permute(grad, inverse),)


def _var_b(B: Backend, g: Prim, c: Ctx) -> Grads:
    dims, correction, keepdim = c.meta
    shape = c.in_shape(0)
    x = c.x(0)
    diff = B.binary("sub", x, B.reduce("mean", x, dims, True))
    n = _count(shape, dims)
    scale = 2.0 / (n - correction) if n > correction else float("nan")
    return (B.binary("mul", B.binary("mul", diff, scale), expand_back(B, g, shape, dims, keepdim)),)


def _reverse_cumsum(B: Backend, g: Prim, dim: int) -> Prim:
    return B.flip(B.cumsum(B.flip(g, (dim,)), dim), (dim,))


def _cumsum_b(B: Backend, g: Prim, c: Ctx) -> Grads:
    return (_reverse_cumsum(B, g, c.meta),)


def _cumprod_b(B: Backend, g: Prim, c: Ctx) -> Grads:
    # d out_j / d x_i = out_j / x_i for j >= i; inputs containing zeros give inf/nan here, as in Burn
    dim = c.meta
    return (B.binary("div", _reverse_cumsum(B, B.binary("mul", g, c.out()), dim), c.x(0)),)


def _t(B: Backend, x: Prim) -> Prim:
    n = len(B.shape_of(x))
    perm = list(range(n))
    perm[-1], perm[-2] = perm[-2], perm[-1]
    return B.permute(x, tuple(perm))


def _matmul_b(B: Backend, g: Prim, c: Ctx) -> Grads:
    ga = B.matmul(g, _t(B, c.x(1))) if c.needs(0) else None
    gb = None
    if c.needs(1):
        a = c.x(0)  # b itself is not saved for its own gradient (save_for), only its shape
        sa, sb = B.shape_of(a), c.in_shape(1)
        if len(sa) > 2 and all(d == 1 for d in sb[:-2]):
            # a weight shared by every batch entry (x @ W with x (batch, seq, k)): its gradient is one
            # GEMM over the flattened batch rows, not a (batch, k, n) product summed over the batch
            k, n = sa[-1], B.shape_of(g)[-1]
            gb = B.matmul(_t(B, B.reshape(a, (-1, k))), B.reshape(g, (-1, n)))
            gb = B.reshape(gb, sb)
        else:
            gb = B.matmul(_t(B, a), g)
    return ga, gb


ROWS = [
    Rule("reduce:sum", _reduce_fwd("sum"), _sum_b),
    Rule("reduce:mean", _reduce_fwd("mean"), _mean_b),
    Rule("reduce:max", _reduce_fwd("max"), _extreme_b, save_in=(0,), save_out=True),
    Rule("reduce:min", _reduce_fwd("min"), _extreme_b, save_in=(0,), save_out=True),
    Rule("reduce:prod", _reduce_fwd("prod"), _prod_b, save_in=(0,)),
    Rule("var", lambda B, m, x: B.var(x, m[0], m[1], m[2]), _var_b, save_in=(0,)),
    Rule("cumsum", lambda B, d, x: B.cumsum(x, d), _cumsum_b),
    Rule("cumprod", lambda B, d, x: B.cumprod(x, d), _cumprod_b, save_in=(0,), save_out=True),
    Rule("matmul", lambda B, _m, a, b: B.matmul(a, b), _matmul_b, save_for=((1,), (0,)), memory_bound=False),
]
