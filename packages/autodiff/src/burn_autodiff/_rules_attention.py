"""The backward rule of fused attention and the Autodiff methods of ``attention`` /
``attention_backward``.

``attention`` saves q, k, v, the mask, its output and the row log-sum-exp (lse, kept as the op's extra
result): nothing of size L×S. Its backward is the backend's ``attention_backward``, which recomputes the
attention weights from lse (a fused kernel where the backend has one, the composed default otherwise).
The mask gets no gradient (a float mask that requires grad is treated as a constant); q, k and v get
theirs. ``attention_backward`` itself is not differentiable (no gradients of gradients through
attention): it runs on the inner backend untracked.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ._graph import ADPrim
from ._rule import Ctx, Grads, Prim, Rule, make_table

if TYPE_CHECKING:
    from collections.abc import Sequence

    from burn.backend import Backend


def _in(v: Any) -> Any:
    return v.inner if type(v) is ADPrim else v


def _attention_fwd(B: Backend, m: tuple[bool, float], q: Prim, k: Prim, v: Prim, mask: Prim | None) -> Any:
    return B.attention(q, k, v, mask, *m)


def _attention_b(B: Backend, g: Prim, c: Ctx) -> Grads:
    is_causal, scale = c.meta
    (lse,) = c.extras
    dq, dk, dv = B.attention_backward(c.x(0), c.x(1), c.x(2), c.x(3), is_causal, scale, c.out(), lse, g)
    return (dq if c.needs(0) else None, dk if c.needs(1) else None, dv if c.needs(2) else None, None)


ROWS = [
    Rule(
        "attention",
        _attention_fwd,
        _attention_b,
        save_in=(0, 1, 2, 3),
        save_out=True,
        memory_bound=False,
        multi=True,
    ),
]
_RULES = make_table(ROWS)


class AutodiffAttentionOps:
    if TYPE_CHECKING:  # provided by Autodiff, which this mixin is a base of
        inner: Backend

        def _op(self, rule: Rule, inputs: Sequence[Any], meta: Any) -> Any: ...

    def attention(
        self, q: ADPrim, k: ADPrim, v: ADPrim, mask: ADPrim | None, is_causal: bool, scale: float
    ) -> tuple[ADPrim, ADPrim]:
        return self._op(_RULES["attention"], (q, k, v, mask), (is_causal, scale))

    def attention_backward(
        self,
        q: ADPrim,
        k: ADPrim,
        v: ADPrim,
        mask: ADPrim | None,
        is_causal: bool,
        scale: float,
        out: ADPrim,
        lse: ADPrim,
        grad: ADPrim,
    ) -> tuple[ADPrim, ADPrim, ADPrim]:
        args = (_in(q), _in(k), _in(v), _in(mask), is_causal, scale, _in(out), _in(lse), _in(grad))
        dq, dk, dv = self.inner.attention_backward(*args)
        return ADPrim(dq), ADPrim(dk), ADPrim(dv)
