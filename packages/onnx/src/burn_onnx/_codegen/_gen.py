"""The state one code generation builds up: variable names, layers for ``__init__``, forward lines, the
record, and the host-side constant folding and shape facts emitters read.

Emitters (``_emitters.py``) see a ``Gen`` and a node and return the expression of its output; they raise
``Unsupported`` for a node they cannot write faithfully, and the driver lists every such node at once.
"""

from __future__ import annotations

import keyword
import re
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .._graph import Graph, Node

# names the generated module itself uses: never a variable or attribute name
RESERVED = frozenset({"self", "burn", "nn", "F", "Param", "device", "forward", "math"})
BUILTINS = frozenset(dir(__builtins__) if isinstance(__builtins__, dict) else dir(__builtins__))


class Unsupported(Exception):
    """An emitter's reason for not writing a node."""


def identifier(name: str, fallback: str = "v") -> str:
    """A readable Python identifier from an ONNX value or initializer name."""
    base = re.sub(r"\W+", "_", name.rsplit("::", 1)[-1]).strip("_").lower()
    base = re.sub(r"_+", "_", base)
    if not base:
        base = fallback
    if base[0].isdigit():
        base = f"{fallback}_{base}"
    if keyword.iskeyword(base) or base in RESERVED or base in BUILTINS:
        base += "_"
    return base


@dataclass
class Layer:
    """A submodule built in ``__init__``: its attribute, constructor expression and record arrays."""

    attr: str
    ctor: str
    record: dict[str, np.ndarray]


@dataclass
class Gen:
    """Everything one generation knows and writes."""

    graph: Graph
    consts: dict[str, np.ndarray]  # initializers, Constant outputs and folded values
    shapes: dict[str, tuple[int | None, ...]]  # from ONNX shape inference, where known
    consumers: dict[str, list[Node]]
    names: dict[str, str] = field(default_factory=dict)  # value -> variable in forward
    layers: list[Layer] = field(default_factory=list)
    params: dict[str, tuple[str, np.ndarray]] = field(default_factory=dict)  # value -> (attr, array)
    lines: list[str] = field(default_factory=list)
    taken: set[str] = field(default_factory=set)  # variable names
    attrs: set[str] = field(default_factory=set)  # attribute names
    counters: dict[str, int] = field(default_factory=dict)
    fused: dict[int, str] = field(default_factory=dict)  # id(node) -> value its output aliases
    uses: set[str] = field(default_factory=set)  # imports the module needs ("F", "Param")

    # ------------------------------------------------------------------ names
    def fresh(self, base: str, numbered: bool = False) -> str:
        """A new variable name: ``base`` if free (unless ``numbered``), else ``base`` + a number."""
        if not numbered and base not in self.taken and base not in RESERVED:
            self.taken.add(base)
            return base
        n = self.counters.get(base, 1)
        while f"{base}{n}" in self.taken:
            n += 1
        self.counters[base] = n + 1
        self.taken.add(f"{base}{n}")
        return f"{base}{n}"

    def numbered(self, base: str) -> str:
        """``base1``, ``base2``, ... (layer attributes and the variables they produce)."""
        n = self.counters.get("#" + base, 1)
        while f"{base}{n}" in self.attrs or f"{base}{n}" in self.taken:
            n += 1
        self.counters["#" + base] = n + 1
        self.attrs.add(f"{base}{n}")
        return f"{base}{n}"

    # ------------------------------------------------------------------ values
    def const(self, name: str) -> np.ndarray | None:
        return self.consts.get(name) if name else None

    def need_const(self, name: str, what: str) -> np.ndarray:
        value = self.const(name)
        if value is None:
            raise Unsupported(f"{what} must be a constant (it is computed at run time)")
        return value

    def ints(self, name: str, what: str) -> list[int]:
        return [int(v) for v in self.need_const(name, what).reshape(-1)]

    def rank(self, name: str) -> int | None:
        c = self.const(name)
        if c is not None:
            return c.ndim
        shape = self.shapes.get(name)
        return None if shape is None else len(shape)

    def axis(self, a: int, name: str, extra: int = 0) -> int:
        """``a`` made non-negative with the rank of ``name`` (+ ``extra``); kept as is when unknown."""
        if a >= 0:
            return a
        rank = self.rank(name)
        return a if rank is None else a + rank + extra

    def arg(self, name: str) -> str:
        """The expression of an input value: its variable, a literal for a one-element constant, or
        ``self.<attr>.val()`` for a larger float constant (a Param in the record)."""
        if name in self.names:
            return self.names[name]
        value = self.const(name)
        if value is None:
            raise Unsupported(f"value {name!r} is not available")
        if value.size == 1 and value.ndim <= 1:
            return literal(value.reshape(-1)[0])
        if value.dtype.kind != "f":
            raise Unsupported(f"integer constant tensor {name!r} used as an operand is not supported yet")
        if name not in self.params:
            attr = identifier(name, "weight")
            while attr in self.attrs:
                attr += "_"
            self.attrs.add(attr)
            self.params[name] = (attr, value)
            self.uses.add("Param")
        return f"self.{self.params[name][0]}.val()"

    def layer(self, base: str, ctor: str, record: dict[str, np.ndarray]) -> str:
        attr = self.numbered(base)
        self.layers.append(Layer(attr, ctor, record))
        return attr

    def only_consumer(self, name: str) -> Node | None:
        users = self.consumers.get(name, [])
        outputs = {v.name for v in self.graph.outputs}
        return users[0] if len(users) == 1 and name not in outputs else None


def literal(v: Any) -> str:
    """A Python literal for a numpy scalar."""
    if isinstance(v, (np.floating, float)):
        f = float(str(np.float32(v))) if np.isfinite(v) else float(v)  # ONNX floats are float32: 1e-05
        if np.isinf(f):
            return 'float("inf")' if f > 0 else 'float("-inf")'
        return repr(f)
    if isinstance(v, (np.bool_, bool)):
        return repr(bool(v))
    return repr(int(v))


def tup(values: Any) -> str:
    """``(1, 2)`` / ``(1,)`` for a sequence of ints."""
    items = [int(v) for v in values]
    return "(" + ", ".join(map(str, items)) + ("," if len(items) == 1 else "") + ")"
