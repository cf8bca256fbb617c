"""Backward rules of the indexing ops: gather/scatter_add and select/select_add (each the other's
adjoint), sort and topk values (scatter the gradient back through the indices) and embedding. The
gather-like ones return a ``ScatterAdd``: the engine adds it into the input's other gradients
(``_accumulate``) rather than into a zero tensor."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._accumulate import ScatterAdd
from ._rule import Ctx, Forward, Grads, Prim, Rule

if TYPE_CHECKING:
    from burn.backend import Backend


def _gather_b(B: Backend, g: Prim, c: Ctx) -> Grads:
    return ScatterAdd("scatter_add", c.meta, c.x(1), g), None


def _scatter_add_b(B: Backend, g: Prim, c: Ctx) -> Grads:
    gsrc = B.gather(g, c.meta, c.x(1)) if c.needs(2) else None
    return (g if c.needs(0) else None), None, gsrc


def _select_b(B: Backend, g: Prim, c: Ctx) -> Grads:
    return ScatterAdd("select_add", c.meta, c.x(1), g), None


def _select_add_b(B: Backend, g: Prim, c: Ctx) -> Grads:
    gv = B.select(g, c.meta, c.x(1)) if c.needs(2) else None
    return (g if c.needs(0) else None), None, gv


def _sorted_values_b(B: Backend, g: Prim, c: Ctx) -> Grads:
    """sort and topk: the value at output position j came from input position indices[j]."""
    dim = c.meta[-1]
    return (ScatterAdd("scatter_add", dim, c.extras[0], g),)


def _sorted_rule(name: str, forward: Forward) -> Rule:
    """sort/topk: forward returns (values, indices); not memory-bound, so checkpointing keeps the
    result rather than sorting again."""
    return Rule(name, forward, _sorted_values_b, memory_bound=False, multi=True)


def _embedding_b(B: Backend, g: Prim, c: Ctx) -> Grads:
    weight_shape = c.in_shape(0)
    flat_idx = B.reshape(c.x(1), (-1,))
    rows = B.reshape(g, (-1, weight_shape[1]))
    return ScatterAdd("select_add", 0, flat_idx, rows), None


ROWS = [
    Rule("gather", lambda B, d, x, i: B.gather(x, d, i), _gather_b, save_in=(1,)),
    Rule("scatter_add", lambda B, d, x, i, s: B.scatter_add(x, d, i, s), _scatter_add_b, save_in=(1,)),
    Rule("select", lambda B, d, x, i: B.select(x, d, i), _select_b, save_in=(1,)),
    Rule("select_add", lambda B, d, x, i, v: B.select_add(x, d, i, v), _select_add_b, save_in=(1,)),
    _sorted_rule("sort", lambda B, m, x: B.sort(x, m[1], m[0])),
    _sorted_rule("topk", lambda B, m, x: B.topk(x, m[0], m[1])),
    Rule("embedding", lambda B, _m, w, i: B.embedding(w, i), _embedding_b, save_in=(1,)),
]
