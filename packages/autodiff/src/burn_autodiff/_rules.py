"""The rule table: one ``Rule`` per differentiable op, keyed like the backend's op tables
("unary:exp", "binary:mul", "reduce:sum", "matmul", "conv", "max_pool", "slice", ...)."""

from __future__ import annotations

from . import (
    _rules_attention,
    _rules_custom,
    _rules_elementwise,
    _rules_index,
    _rules_module,
    _rules_reduce,
    _rules_shape,
    _rules_vision,
)
from ._rule import Rule, make_table

RULES: dict[str, Rule] = make_table(
    [
        *_rules_elementwise.ROWS,
        *_rules_reduce.ROWS,
        *_rules_shape.ROWS,
        *_rules_index.ROWS,
        *_rules_module.ROWS,
        *_rules_vision.ROWS,
        *_rules_attention.ROWS,
        *_rules_custom.ROWS,
    ]
)


def _group(prefix: str) -> dict[str, Rule]:
    n = len(prefix)
    return {k[n:]: r for k, r in RULES.items() if k.startswith(prefix)}


UNARY_RULES = _group("unary:")
BINARY_RULES = _group("binary:")
REDUCE_RULES = _group("reduce:")
