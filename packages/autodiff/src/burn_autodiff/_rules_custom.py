"""The backward rule of ``burn.custom`` ops and the Autodiff method ``custom``.

The op runs on the inner backend as one call (its own kernel there); the rule saves its inputs and
output, and its backward asks the op (``CustomOp.vjp``): the user's ``backward`` on tensors of the
inner device, or the vector-Jacobian product of the op's ``compose`` through autodiff.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from burn.custom import get

from ._rule import Ctx, Grads, Prim, Rule, make_table

if TYPE_CHECKING:
    from burn.backend import Backend


def _custom_fwd(B: Backend, m: tuple[str, Any], *xs: Prim) -> Prim:
    return B.custom(m[0], list(xs), m[1])


def _custom_b(B: Backend, g: Prim, c: Ctx) -> Grads:
    name, attrs = c.meta
    n = len(c.node.parents)
    xs = [c.x(i) for i in range(n)]
    return get(name).vjp(B, xs, c.out(), attrs, g, [c.needs(i) for i in range(n)])


ROWS = [Rule("custom", _custom_fwd, _custom_b, save_in="all", save_out=True, memory_bound=False)]
_RULES = make_table(ROWS)


class AutodiffCustomOps:
    if TYPE_CHECKING:  # provided by Autodiff, which this mixin is a base of

        def _op(self, rule: Rule, inputs: Sequence[Any], meta: Any) -> Any: ...

    def custom(self, name: str, xs: Sequence[Any], attrs: tuple[tuple[str, Any], ...]) -> Any:
        return self._op(_RULES["custom"], tuple(xs), (name, attrs))
