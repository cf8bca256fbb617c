"""Graph pieces: the autodiff primitive and the graph node it carries.

An ``ADPrim`` wraps a primitive of the inner backend. Its ``node`` is None when nothing upstream requires
grad: such tensors cost one small wrapper and no graph. A tracked tensor's node records the rule that
produced it, its parents (one per input; None for an input that is not tracked) and what the backward
rule reads (saved values, or references to recomputable nodes under balanced checkpointing).
"""

from __future__ import annotations

from itertools import count
from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:
    from ._rule import Rule

# Node ids only need to be unique in the process; the graph itself is reachable only from tensors.
_ids = count(1)


class Node:
    """One recorded op (or a leaf when ``rule`` is None).

    ``saved_in``: per input, the value the backward reads (a primitive, a Python scalar, or a ``Node``
    whose value is recomputed), or None when the rule reads no input. ``saved_out``: the output value
    the rule reads (a primitive, ``self`` to recompute it, or None). ``retro_in``: under balanced
    checkpointing, what recomputing this node's output reads (same forms as ``saved_in``).
    """

    __slots__ = (
        "id",
        "rule",
        "parents",
        "shape",
        "in_shapes",
        "meta",
        "saved_in",
        "saved_out",
        "retro_in",
        "extras",
        "__weakref__",
    )

    def __init__(
        self,
        rule: Rule | None,
        parents: tuple[Node | None, ...],
        shape: tuple[int, ...],
        in_shapes: tuple[tuple[int, ...] | None, ...] = (),
        meta: Any = None,
    ) -> None:
        self.id = next(_ids)
        self.rule: Rule | None = rule
        self.parents = parents
        self.shape = shape
        self.in_shapes = in_shapes
        self.meta = meta
        self.saved_in: tuple[Any, ...] | None = None
        self.saved_out: Any = None
        self.retro_in: tuple[Any, ...] | None = None
        self.extras: tuple[Any, ...] = ()

    @property
    def is_leaf(self) -> bool:
        return self.rule is None

    @property
    def recomputable(self) -> bool:
        """True when the output is not kept but recomputed from ``retro_in`` (balanced checkpointing)."""
        return self.retro_in is not None

    def free(self) -> None:
        """Drop everything the backward needed; the node stays only as a marker that it was consumed."""
        self.rule = FREED
        self.parents = ()
        self.meta = None
        self.saved_in = None
        self.saved_out = None
        self.retro_in = None
        self.extras = ()

    def __repr__(self) -> str:
        name = "leaf" if self.rule is None else getattr(self.rule, "name", "?")
        return f"<Node {self.id} {name} {self.shape}>"


class _Freed:
    name = "freed"

    def __repr__(self) -> str:
        return "<freed>"


# typed as a Rule: a freed node keeps it where its rule was, and only ``rule is FREED`` reads it
FREED: Rule = cast("Rule", _Freed())


def leaf(shape: tuple[int, ...]) -> Node:
    return Node(None, (), shape)


class ADPrim:
    """The Autodiff backend's primitive: an inner primitive plus an optional graph node."""

    __slots__ = ("inner", "node", "__weakref__")

    def __init__(self, inner: Any, node: Node | None = None) -> None:
        self.inner = inner
        self.node = node

    @property
    def shape(self) -> tuple[int, ...]:
        return self.inner.shape

    def __repr__(self) -> str:
        return f"ADPrim({self.shape}, node={self.node!r})"
