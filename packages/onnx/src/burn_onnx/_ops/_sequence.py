"""Sequence and optional ops: a sequence value is a Python list of tensors; an optional value is its
content (a tensor or a list), or None when empty."""

from __future__ import annotations

from typing import Any

import burn
import numpy as np

from .._graph import Node
from .._registry import op
from ._common import axis


@op("SequenceEmpty")
def sequence_empty(ctx: Any, node: Node) -> list[burn.Tensor]:
    return []


@op("SequenceConstruct")
def sequence_construct(ctx: Any, node: Node, *xs: burn.Tensor) -> list[burn.Tensor]:
    return list(xs)


def _position(ctx: Any, pos: Any, n: int, default: int, inserting: bool = False) -> int:
    p = int(ctx.scalar(pos, default))
    limit = n + 1 if inserting else n
    if not -limit <= p < limit and not (inserting and p == n):
        raise IndexError(f"sequence position {p} is out of range for a sequence of {n}")
    return p + n if p < 0 else p


@op("SequenceAt", host=(1,))
def sequence_at(ctx: Any, node: Node, seq: list[burn.Tensor], pos: Any) -> burn.Tensor:
    return seq[_position(ctx, pos, len(seq), 0)]


@op("SequenceInsert", host=(2,))
def sequence_insert(
    ctx: Any, node: Node, seq: list[burn.Tensor], t: burn.Tensor, pos: Any = None
) -> list[burn.Tensor]:
    out = list(seq)
    out.insert(_position(ctx, pos, len(seq), len(seq), inserting=True), t)
    return out


@op("SequenceErase", host=(1,))
def sequence_erase(ctx: Any, node: Node, seq: list[burn.Tensor], pos: Any = None) -> list[burn.Tensor]:
    out = list(seq)
    del out[_position(ctx, pos, len(seq), -1)]
    return out


@op("SequenceLength")
def sequence_length(ctx: Any, node: Node, seq: list[burn.Tensor]) -> burn.Tensor:
    return ctx.tensor(np.array(len(seq), dtype=np.int64))


@op("ConcatFromSequence")
def concat_from_sequence(ctx: Any, node: Node, seq: list[burn.Tensor]) -> burn.Tensor:
    new_axis = int(node.attrs.get("new_axis", 0))
    rank = seq[0].ndim + new_axis
    a = axis(int(node.attrs["axis"]), rank, node)
    return burn.stack(seq, a) if new_axis else burn.cat(seq, a)


@op("SplitToSequence", host=(1,))
def split_to_sequence(ctx: Any, node: Node, x: burn.Tensor, split: Any = None) -> list[burn.Tensor]:
    a = axis(int(node.attrs.get("axis", 0)), x.ndim, node)
    n = x.shape[a]
    if split is None:
        parts = [x.narrow(a, i, 1) for i in range(n)]
        return parts if node.attrs.get("keepdims", 1) else [p.squeeze(a) for p in parts]
    sizes = ctx.ints(split)
    arr = ctx.array(split)
    if arr.ndim == 0:
        step = sizes[0]
        sizes = [min(step, n - i) for i in range(0, n, step)]
    out, start = [], 0
    for s in sizes:
        out.append(x.narrow(a, start, s))
        start += s
    return out


@op("SequenceMap")
def sequence_map(ctx: Any, node: Node, seq: list[burn.Tensor], *extra: Any) -> Any:
    """The body once per item of ``seq``; additional sequence inputs give their item at the same
    position, tensors are passed whole. Each body output becomes one output sequence."""
    body = node.attrs["body"]
    outputs: list[list[Any]] = [[] for _ in body.outputs]
    for i in range(len(seq)):
        feeds = [seq[i]] + [x[i] if isinstance(x, list) else x for x in extra]
        for out, value in zip(outputs, ctx.run(body, feeds)):
            out.append(value)
    return outputs[0] if len(outputs) == 1 else tuple(outputs)


@op("Optional", since=15)
def optional(ctx: Any, node: Node, x: Any = None) -> Any:
    return x


@op("OptionalHasElement", since=15)
def optional_has_element(ctx: Any, node: Node, x: Any = None) -> burn.Tensor:
    return ctx.tensor(np.array(x is not None))


@op("OptionalGetElement", since=15)
def optional_get_element(ctx: Any, node: Node, x: Any) -> Any:
    if x is None:
        raise ValueError(f"OptionalGetElement node {node.label!r}: the optional input is empty")
    return x
