"""The op table: one ``OpSpec`` per ONNX op type, each a small converter function (STYLE.md: rules as
tables). Converters live in ``_ops/`` grouped by family and register themselves with ``@op``.

A converter is ``fn(ctx, node, *inputs) -> Tensor | tuple``: ``inputs`` are the node's inputs in order
(None for an omitted optional input), already on the device the node runs on, except the slots listed
in ``host``: shapes, axes, sizes and scales that the converter reads as numbers (``ctx.ints(x)``) and
that therefore stay wherever they are (on the host for shape arithmetic, so reading them costs nothing).
A tuple return gives several outputs; a list is one sequence value.

``check(node)`` returns why a node's attribute values cannot run (or None); it runs at load time, so a
model fails before any compute with every offending node listed.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ._graph import Node

Converter = Callable[..., Any]
Check = Callable[[Node], "str | None"]

OLDEST_OPSET = 6


@dataclass(frozen=True)
class OpSpec:
    """How one ONNX op type runs: the converter, its family, the oldest opset it handles, the input
    slots read on the host, an attribute check, and whether output shapes depend on values."""

    op_type: str
    fn: Converter
    family: str
    since: int = 1
    host: frozenset[int] = frozenset()
    check: Check | None = None
    dynamic: bool = False  # output shape depends on input values (NonZero, Loop): never cached


OPS: dict[str, OpSpec] = {}


def op(
    *names: str,
    since: int = 1,
    host: tuple[int, ...] = (),
    check: Check | None = None,
    dynamic: bool = False,
) -> Callable[[Converter], Converter]:
    """Register the decorated converter for each op type in ``names``."""

    def register(fn: Converter) -> Converter:
        family = fn.__module__.rpartition("._")[2]
        for name in names:
            if name in OPS:
                raise ValueError(f"op {name!r} registered twice ({OPS[name].fn.__module__})")
            OPS[name] = OpSpec(name, fn, family, since, frozenset(host), check, dynamic)
        return fn

    return register


def ops() -> dict[str, OpSpec]:
    """The filled table (importing the converter modules on first use)."""
    from . import _ops  # noqa: F401  (registers every converter)

    return OPS


def attr_in(name: str, allowed: tuple[Any, ...], default: Any) -> Check:
    """A check that attribute ``name`` is one of ``allowed``."""

    def check(node: Node) -> str | None:
        value = node.attrs.get(name, default)
        if value not in allowed:
            return f"attribute {name}={value!r} is not supported (supported: {', '.join(map(repr, allowed))})"
        return None

    return check


def requires(*names: str, before: int | None = None) -> Check:
    """A check that every attribute in ``names`` is present; with ``before``, only in opsets older than
    it (where the value later became an input). A missing one fails at load time with the node named,
    not as a KeyError in the middle of a run."""

    def check(node: Node) -> str | None:
        if before is not None and node.opset >= before:
            return None
        missing = [n for n in names if n not in node.attrs]
        if missing:
            since = f" before opset {before}" if before is not None else ""
            return (
                f"required attribute(s) {', '.join(missing)} missing ({node.op_type}{since} has no default)"
            )
        return None

    return check


def checks(*fns: Check) -> Check:
    """Several checks as one: the first problem found."""

    def check(node: Node) -> str | None:
        for fn in fns:
            problem = fn(node)
            if problem:
                return problem
        return None

    return check
