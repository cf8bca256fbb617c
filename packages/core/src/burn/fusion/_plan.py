"""``FusedKernel``: one generated kernel as a backend-neutral plan, and the runtime protocol that runs it.

A plan lists its tensor inputs (``inputs``: dtypes, in binding order), its scalar inputs (``scalars``:
dtypes), its ops in evaluation order and which op results it writes (``outputs``). Values are
numbered: inputs first, then scalars, then one value per op, so an op's ``args`` are value numbers.
Every output has the kernel's iteration shape; inputs broadcast to it (NumPy rules, by strides).
``key`` is the plan without its shape: equal keys render the same source for any shape of the same
rank, so a backend compiles it once.

Two kinds of plan run more than element-wise ops in their kernel (where the runtime offers them,
see ``FusionRuntime``):

- a *reduce kernel* (``reduce`` set): the plan's one output is not written but reduced
  (``FusedReduce``: sum, mean, max or min over trailing dims of ``shape``), so an element-wise chain
  feeding a reduction (``(x - m).square().mean(-1)``) never reaches memory; the kernel writes the
  reduction's result;
- a *matmul epilogue* (``matmul`` set): value 0 (the plan's first input) is the product ``lhs @ rhs``
  of the first two tensors ``execute`` gets (it then gets one tensor more than ``inputs`` lists), and
  the ops (a bias, an activation) run on each product element before it is stored.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

from .._dtype import DType


@dataclass(frozen=True)
class FusedOp:
    """One op of a plan: ``kind`` (unary, binary, where, clamp, cast) and ``name`` (``"exp"``, ``"add"``,
    ...; the target dtype's name for a cast), ``compute`` (the operands' dtype), ``out`` (the result's)
    and ``args`` (value numbers).

    >>> burn.fusion.FusedOp("binary", "add", burn.float32, burn.float32, (0, 1)).args
    (0, 1)
    """

    kind: str
    name: str
    compute: DType
    out: DType
    args: tuple[int, ...]


@dataclass(frozen=True)
class FusedReduce:
    """The reduction of a reduce kernel: ``op`` (sum, mean, max, min) over ``dims`` (the last dims of
    the plan's shape: the last one, or all), keeping them as size 1 when ``keepdim``.

    >>> FusedReduce("mean", (1,), True).shape((4, 3))
    (4, 1)
    """

    op: str
    dims: tuple[int, ...]
    keepdim: bool

    def shape(self, shape: tuple[int, ...]) -> tuple[int, ...]:
        """The result's shape for an iteration of ``shape``."""
        if self.keepdim:
            return tuple(1 if d in self.dims else s for d, s in enumerate(shape))
        return tuple(s for d, s in enumerate(shape) if d not in self.dims)

    def rows(self, shape: tuple[int, ...]) -> tuple[int, int]:
        """(results, elements reduced into each) for an iteration of ``shape``."""
        n = 1
        for d in self.dims:
            n *= shape[d]
        total = 1
        for s in shape:
            total *= s
        return (total // n if n else 0), n


@dataclass(frozen=True)
class FusedKernel:
    """One kernel's plan (see the module docstring): ``exp(x) * 2`` over a (4,) input reads value 0
    (the input) and value 1 (the scalar), computes values 2 and 3 and writes value 3.

    >>> f32 = burn.float32
    >>> ops = (FusedOp("unary", "exp", f32, f32, (0,)), FusedOp("binary", "mul", f32, f32, (2, 1)))
    >>> plan = FusedKernel((4,), (f32,), (f32,), ops, (3,))
    >>> plan.first_op, plan.out_dtypes()
    (2, (burn.float32,))
    """

    shape: tuple[int, ...]
    inputs: tuple[DType, ...]
    scalars: tuple[DType, ...]
    ops: tuple[FusedOp, ...]
    outputs: tuple[int, ...]  # value numbers written, in output order (a reduce kernel's may be an input)
    reduce: FusedReduce | None = None  # a reduce kernel: its one output is reduced, not written
    matmul: bool = False  # a matmul epilogue: value 0 is the product of execute's first two tensors
    key: tuple[Any, ...] = field(init=False, compare=False, repr=False)
    # the runtime's compiled kernels for this plan (by whatever else it specialises on), so a repeated
    # plan finds its kernel without hashing ``key`` again
    cache: dict[Any, Any] = field(default_factory=dict, init=False, compare=False, repr=False)

    def __post_init__(self) -> None:
        ops = tuple((o.kind, o.name, o.compute.name, o.out.name, o.args) for o in self.ops)
        inputs = tuple(d.name for d in self.inputs)
        key: tuple[Any, ...] = (
            inputs,
            tuple(d.name for d in self.scalars),
            ops,
            self.outputs,
            len(self.shape),
        )
        if self.reduce is not None or self.matmul:
            key += (self.reduce, self.matmul)
        object.__setattr__(self, "key", key)

    @property
    def first_op(self) -> int:
        """The value number of the first op's result."""
        return len(self.inputs) + len(self.scalars)

    def out_dtypes(self) -> tuple[DType, ...]:
        dts = self.cache.get("out_dtypes")
        if dts is None:
            first = self.first_op
            dts = self.cache["out_dtypes"] = tuple(
                self.inputs[v] if v < first else self.ops[v - first].out for v in self.outputs
            )
        return dts

    def out_shape(self) -> tuple[int, ...]:
        """The shape of every output: the iteration shape, reduced for a reduce kernel."""
        return self.shape if self.reduce is None else self.reduce.shape(self.shape)

    @property
    def fused(self) -> bool:
        """Whether the kernel fuses several ops (counted in ``burn.profile``'s ``fused``)."""
        return len(self.ops) + (self.reduce is not None or self.matmul) > 1


class FusionRuntime(Protocol):
    """What a backend supplies so fusion can generate kernels for it (``Backend.fusion_runtime()``).

    ``max_tensors``: the most tensor bindings (inputs + outputs) one kernel may have; ``max_ops``: the
    most ops in one kernel. ``fusable(kind, name, compute, out)`` says whether the renderer has the op
    for those dtypes (others run eagerly on the backend). ``execute(plan, inputs, scalars)`` runs the
    plan over the backend's primitives and returns one new primitive per output.

    Optional capabilities (a runtime without them keeps element-wise kernels only):
    ``fuse_reduce(op, dtype, shape, dims)``: whether it runs a reduce kernel (``FusedReduce``) of that
    op over ``dims`` of an iteration ``shape`` producing ``dtype``; ``fuse_matmul(lhs, rhs)``: whether it
    runs a matmul epilogue for those operands (primitives of the backend);
    ``execute_reusing(plan, inputs, scalars, donors)``: ``execute`` that may write outputs into the
    inputs numbered in ``donors`` (values nothing reads after this kernel and no view shares; fusion
    finds them when it replays a program) and return those inputs as the outputs, where the buffer
    fits (shape, dtype, layout).

    >>> runtime = burn.fusion.ReferenceRuntime(burn.device("cpu").backend)  # the runtime of no renderer
    >>> runtime.max_tensors, runtime.fusable("unary", "exp", burn.float32, burn.float32)
    (64, True)
    """

    max_tensors: int
    max_ops: int

    def fusable(self, kind: str, name: str, compute: DType, out: DType) -> bool: ...

    def execute(self, plan: FusedKernel, inputs: list[Any], scalars: list[Any]) -> list[Any]: ...
