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

from collections.abc import Callable
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

    The reduce epilogue: ``post`` ops run on each result after the reduction (``rsqrt(var + eps)``,
    ``log(sum) + max``). The reduced value is number ``plan.first_op + len(plan.ops)`` and post op j
    is that number + 1 + j; post ops read it, each other, the plan's scalars and its tensor inputs,
    which they read per result (broadcast to the result's shape; the pre-reduction ops read theirs
    per element of the plan's shape). ``written``: the values stored per result, in output order
    (default: the reduced value alone).

    >>> FusedReduce("mean", (1,), True).shape((4, 3))
    (4, 1)
    """

    op: str
    dims: tuple[int, ...]
    keepdim: bool
    post: tuple[FusedOp, ...] = ()
    written: tuple[int, ...] = ()

    def shape(self, shape: tuple[int, ...]) -> tuple[int, ...]:
        """The result's shape for an iteration of ``shape``."""
        if self.keepdim:
            return tuple(1 if d in self.dims else s for d, s in enumerate(shape))
        return tuple(s for d, s in enumerate(shape) if d not in self.dims)

    def reduced_value(self, plan: FusedKernel) -> int:
        """The value number of the reduced value in ``plan``."""
        return plan.first_op + len(plan.ops)

    def stores(self, plan: FusedKernel) -> tuple[int, ...]:
        """The value numbers stored per result (``written``, or the reduced value alone)."""
        return self.written or (self.reduced_value(plan),)

    def store_dtypes(self, plan: FusedKernel) -> tuple[DType, ...]:
        """The dtype of each stored value: the reduced value has the reduced chain's dtype."""
        r = self.reduced_value(plan)
        reduced = plan.out_dtypes()[0]
        return tuple(reduced if v == r else self.post[v - r - 1].out for v in self.stores(plan))

    def pre_reads(self, plan: FusedKernel) -> frozenset[int]:
        """The tensor inputs read per element: those the plan's ops read, or the one it reduces."""
        k = len(plan.inputs)
        reads = {a for op in plan.ops for a in op.args if a < k}
        if plan.outputs[0] < k:
            reads.add(plan.outputs[0])
        return frozenset(reads)

    def post_reads(self) -> frozenset[int]:
        """The value numbers the post ops read (inputs and scalars among them)."""
        return frozenset(a for op in self.post for a in op.args)

    def epilogue(self, plan: FusedKernel) -> tuple[FusedKernel, tuple[int, ...], tuple[int, ...]]:
        """The post ops as an element-wise plan of their own over the result's shape, for a runtime
        that reduces first and runs the epilogue after: (the plan, the tensor inputs it takes after
        the reduced value (indices into ``plan``'s inputs), the scalars it takes (indices into
        ``plan``'s scalars)). Its input 0 is the reduced value; its outputs are the stored post
        values (not the reduced value itself)."""
        made = plan.cache.get("epilogue")
        if made is None:
            reads = self.post_reads()
            ins = tuple(k for k in range(len(plan.inputs)) if k in reads)
            first = len(plan.inputs)
            scs = tuple(j for j in range(len(plan.scalars)) if first + j in reads)
            r = self.reduced_value(plan)
            number = {r: 0, **{k: 1 + i for i, k in enumerate(ins)}}
            base = 1 + len(ins)
            number.update({first + j: base + i for i, j in enumerate(scs)})
            base += len(scs)
            ops = []
            for j, op in enumerate(self.post):
                ops.append(FusedOp(op.kind, op.name, op.compute, op.out, tuple(number[a] for a in op.args)))
                number[r + 1 + j] = base + j
            dtypes = (plan.out_dtypes()[0], *(plan.inputs[k] for k in ins))
            sub = FusedKernel(
                self.shape(plan.shape),
                dtypes,
                tuple(plan.scalars[j] for j in scs),
                tuple(ops),
                tuple(number[v] for v in self.stores(plan) if v != r),
            )
            made = plan.cache["epilogue"] = (sub, ins, scs)
        return made

    def finish(
        self,
        plan: FusedKernel,
        reduced: Any,
        inputs: list[Any],
        scalars: list[Any],
        execute: Callable[[FusedKernel, list[Any], list[Any]], list[Any]],
    ) -> list[Any]:
        """The stored values of ``plan`` from its ``reduced`` value, running the post ops (if any)
        as the element-wise plan ``epilogue`` makes, through ``execute``."""
        if not self.post:
            return [reduced]
        sub, ins, scs = self.epilogue(plan)
        r = self.reduced_value(plan)
        values = iter(
            execute(sub, [reduced, *(inputs[k] for k in ins)], [scalars[j] for j in scs])
            if sub.outputs
            else ()
        )
        return [reduced if v == r else next(values) for v in self.stores(plan)]

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

    def product_chain(self) -> FusedKernel:
        """A matmul epilogue's ops as a plain element-wise plan over the written product (value 0,
        its first input) without the product among its outputs: for a runtime that writes the
        product first and runs the ops after (kept in ``cache``)."""
        plain = self.cache.get("plain")
        if plain is None:
            outputs = tuple(v for v in self.outputs if v)
            plain = self.cache["plain"] = FusedKernel(
                self.shape, self.inputs, self.scalars, self.ops, outputs
            )
        return plain

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
    op over ``dims`` of an iteration ``shape`` producing ``dtype``, and ``reduce_epilogues = True``
    where those kernels also run ``FusedReduce.post`` (a reduce epilogue; store every value of
    ``FusedReduce.stores``); ``fuse_matmul(lhs, rhs)``: whether it
    runs a matmul epilogue for those operands (primitives of the backend);
    ``execute_reusing(plan, inputs, scalars, donors)``: ``execute`` that may write outputs into the
    inputs numbered in ``donors`` (values nothing reads after this kernel and no view shares; fusion
    finds them when it replays a program) and return those inputs as the outputs, where the buffer
    fits (shape, dtype, layout); ``compile_ahead()``: a context manager under which ``execute`` only
    starts compiling the plan's kernel (in the background) and returns zero-filled results of the
    right shapes and dtypes: a stream seen the first time is planned under it, then run, so a first
    step's kernels compile side by side (opt-in: ``BURN_COMPILE_AHEAD=1``); ``stream_segment``: the
    most ops a stream records before it is run without a read (default 4096; a runtime whose launches
    do not wait may prefer shorter streams, so the device works on a step's first part while the host
    records the rest).

    >>> runtime = burn.fusion.ReferenceRuntime(burn.device("cpu").backend)  # the runtime of no renderer
    >>> runtime.max_tensors, runtime.fusable("unary", "exp", burn.float32, burn.float32)
    (64, True)
    """

    max_tensors: int
    max_ops: int

    def fusable(self, kind: str, name: str, compute: DType, out: DType) -> bool: ...

    def execute(self, plan: FusedKernel, inputs: list[Any], scalars: list[Any]) -> list[Any]: ...
