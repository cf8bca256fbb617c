"""The lazy op graph of the fusion decorator: ``Node``s (an element-wise op not yet run, or a value the
inner backend holds) and ``FPrim``, the handle a tensor holds.

A node keeps its operands (nodes and Python scalars) until it is materialised; then it keeps only the
inner backend's primitive and forgets its operands, so their buffers can be freed. The handle exists so
the planner can tell which lazy values are still wanted outside the graph: a node whose handle died is
an intermediate and is computed inside the kernels that need it, never written to memory.
"""

from __future__ import annotations

import itertools
import weakref
from typing import Any

from .._dtype import DType

Scalar = bool | int | float
_SEQ = itertools.count()


class Node:
    """One value of the stream. ``value`` is the inner primitive once computed (then ``op`` is None).

    A lazy node has ``op`` (``(kind, name)``: kind one of unary, binary, where, clamp, cast, or "call"
    for any other backend op, run as a whole by the inner backend),
    ``args`` (nodes or scalars, in the op's operand order), ``compute`` (the dtype the op computes in,
    which scalars take; for a call, the inner backend's ``call_state()`` token when it has one),
    ``nleaves`` (reads of computed nodes in its expression) and ``size`` (ops in its expression);
    both count shared parts again, so they bound a kernel's bindings and length.
    """

    __slots__ = (
        "op",
        "args",
        "value",
        "shape",
        "dtype",
        "compute",
        "handle",
        "nleaves",
        "size",
        "seq",
        "pos",
        "sbase",
        "twin",
        "__weakref__",  # a CUDA graph runtime lends its buffers to nodes and watches them weakly
    )

    def __init__(
        self,
        shape: tuple[int, ...],
        dtype: DType,
        value: Any = None,
        op: tuple[str, str] | None = None,
        args: tuple[Node | Scalar, ...] = (),
        compute: Any = None,
    ) -> None:
        self.shape = shape
        self.dtype = dtype
        self.value = value
        self.op = op
        self.args = args
        self.compute = compute
        self.handle: weakref.ref[FPrim] | None = None
        self.seq = next(_SEQ)  # creation order: operands are always older, so it is a topological order
        self.pos = -1  # index in the stream being recorded (lazy nodes only)
        self.sbase = 0  # index of its first scalar operand in the stream's scalars
        # a multi-output call: the node of its next output (a three-output call chains two twins)
        self.twin: Node | None = None
        nleaves = size = 0
        if op is not None:
            size = 1
            for a in args:
                if type(a) is Node:
                    if a.op is None:
                        nleaves += 1
                    else:
                        nleaves += a.nleaves
                        size += a.size
        self.nleaves: int = nleaves
        self.size: int = size

    @property
    def lazy(self) -> bool:
        return self.value is None

    def done(self, value: Any) -> None:
        """Record the computed value and drop the expression (its operands may now be freed)."""
        self.value = value
        self.op = None
        self.args = ()
        self.nleaves = 0
        self.size = 0

    def __repr__(self) -> str:
        what = "computed" if self.op is None else f"{self.op[1]}"
        return f"Node({what}, {self.dtype.name}{list(self.shape)})"


class FPrim:
    """The fusion backend's primitive: a handle on a node (lazy or computed)."""

    __slots__ = ("node", "__weakref__")

    def __init__(self, node: Node) -> None:
        self.node = node

    @property
    def shape(self) -> tuple[int, ...]:
        return self.node.shape

    @property
    def dtype(self) -> DType:
        return self.node.dtype

    def __repr__(self) -> str:
        return f"FPrim({self.node!r})"


def lazy_handle(node: Node) -> FPrim:
    """A handle on a new lazy node, which the node watches (weakly) to know whether it is wanted."""
    p = FPrim(node)
    node.handle = weakref.ref(p)
    return p


def wanted(node: Node) -> bool:
    """Whether some tensor outside the graph still holds this lazy node."""
    h = node.handle
    return h is not None and h() is not None


def results(n: Node) -> list[Node]:
    """The nodes of every output of call ``n``: itself, then its twins in output order."""
    out = [n]
    t = n.twin
    while t is not None:
        out.append(t)
        t = t.twin
    return out
