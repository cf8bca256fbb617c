"""The shape of a backward rule, the context a rule reads from, and helpers shared by the rule files.

A rule is one row of the table in ``_rules``: how to run the op on the inner backend (``forward``, also
used to recompute memory-bound outputs under balanced checkpointing), how to turn the output gradient
into input gradients (``backward``), and which values the backward reads (``save_in``, ``save_out``), so
that nothing else is kept alive by the graph.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from burn.backend import reduced_shape

if TYPE_CHECKING:
    from burn.backend import Backend

    from ._graph import Node

Prim = Any  # a primitive of the inner backend (its own array type)
Grads = Sequence[Prim | None]  # per input, in order: its gradient, None, or (slices) an _accumulate.Window
# backward(B, g, ctx) -> Grads
Backward = Callable[["Backend", Prim, "Ctx"], Grads]
Forward = Callable[..., Any]  # forward(B, meta, *inputs) -> output (a tuple when multi)


@dataclass(frozen=True, slots=True)
class Rule:
    """One op's autodiff rule.

    ``save_in``: indices of the inputs the backward reads, or "all". ``save_out``: whether it reads the
    output. ``memory_bound``: cheap to recompute (element-wise, reshape-like), so balanced checkpointing
    keeps nothing for it. ``multi``: forward returns (output, *extras); extras (indices) are not
    differentiated, kept for the backward and returned untracked. ``save_for``: for rules whose reads
    depend on which gradients are wanted, per input what its gradient reads (matmul: a's reads b, b's
    reads a; -1 names the output); only what the tracked inputs' gradients read is kept, and
    ``save_in``/``save_out`` are not used.
    """

    name: str
    forward: Forward
    backward: Backward
    save_in: tuple[int, ...] | str = ()
    save_out: bool = False
    memory_bound: bool = True
    multi: bool = False
    save_for: tuple[tuple[int, ...], ...] | None = None


OUT = -1  # in a rule's ``save_for``: the op's output


class _SelfRef:
    """Marks a saved output that is recomputed from the node's own inputs."""

    def __repr__(self) -> str:
        return "<self>"


SELF: Any = _SelfRef()


class Ctx:
    """What a backward rule sees: saved inputs/output (recomputed on demand), meta, shapes, extras."""

    __slots__ = ("node", "_resolve")

    def __init__(self, node: Node, resolve: Callable[[Any], Prim]) -> None:
        self.node = node
        self._resolve = resolve

    def x(self, i: int) -> Any:
        """The value of input ``i`` (a primitive or a Python scalar)."""
        saved = self.node.saved_in
        assert saved is not None, "the rule reads inputs it did not save (save_in)"
        return self._resolve(saved[i])

    def out(self) -> Prim:
        """The op's output value."""
        v = self.node.saved_out
        return self._resolve(self.node if v is SELF else v)

    def needs(self, i: int) -> bool:
        """Whether input ``i`` is tracked (rules skip gradients nobody reads)."""
        return self.node.parents[i] is not None

    @property
    def meta(self) -> Any:
        return self.node.meta

    def in_shape(self, i: int) -> tuple[int, ...]:
        shape = self.node.in_shapes[i]
        assert shape is not None, "in_shape of an untracked input"
        return shape

    @property
    def shape(self) -> tuple[int, ...]:
        return self.node.shape

    @property
    def extras(self) -> tuple[Prim, ...]:
        return self.node.extras


def make_table(rows: Sequence[Rule]) -> dict[str, Rule]:
    table: dict[str, Rule] = {}
    for r in rows:
        if r.name in table:
            raise ValueError(f"duplicate autodiff rule {r.name!r}")
        table[r.name] = r
    return table


# ---------------------------------------------------------------- helpers for rule bodies
def zeros(B: Backend, shape: tuple[int, ...], like: Prim) -> Prim:
    return B.full(tuple(shape), 0.0, B.dtype_of(like))


def mul(B: Backend, a: Prim | float, b: Prim | float) -> Prim:
    return B.binary("mul", a, b)


def masked(B: Backend, g: Prim, cond: Prim) -> Prim:
    """g where ``cond`` holds, else 0, as ``g * cond``: one fused pass, where numpy's ``where`` is
    several times slower (gradients are finite, so 0 * g never meets an inf)."""
    return B.binary("mul", g, B.cast(cond, B.dtype_of(g)))


def expand_back(B: Backend, g: Prim, in_shape: tuple[int, ...], dims: tuple[int, ...], keepdim: bool) -> Prim:
    """Broadcast a reduced gradient back over the reduced ``dims`` of ``in_shape``."""
    if not keepdim:
        g = B.reshape(g, reduced_shape(in_shape, dims, True))
    return B.expand(g, tuple(in_shape))


def unbroadcast(B: Backend, g: Prim, shape: tuple[int, ...]) -> Prim:
    """Sum ``g`` over the dims broadcasting added or stretched, giving ``shape``."""
    gshape = tuple(B.shape_of(g))
    lead = len(gshape) - len(shape)
    dims = tuple(range(lead)) + tuple(
        lead + i for i, n in enumerate(shape) if n == 1 and gshape[lead + i] != 1
    )
    if dims:
        g = B.reduce("sum", g, dims, True)
    return B.reshape(g, tuple(shape)) if tuple(B.shape_of(g)) != tuple(shape) else g


def full_index(shape: tuple[int, ...]) -> list[tuple[int, int, int]]:
    return [(0, n, 1) for n in shape]


def int_prim(B: Backend, values: Sequence[int]) -> Prim:
    """A 1-d default-int primitive from host values (small index tables built by rules)."""
    import numpy as np

    return B.from_numpy(np.asarray(values, dtype=np.int64), B.default_int)
