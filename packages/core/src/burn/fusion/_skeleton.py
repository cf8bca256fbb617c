"""The kernel skeleton: a fused plan as the statements every language's kernel runs, planned once.

``skeleton(plan)`` turns a ``FusedKernel`` into stages of abstract statements, numbered as the plan
numbers its values (tensor inputs, then scalars, then one value per op):

- ``Load``: a tensor input's element at the kernel's position (broadcast inputs by their strides);
- ``ScalarLoad``: a scalar input;
- ``Apply``: one ``FusedOp`` (an op, or a cast) on operand values, with its compute and out dtypes;
- ``Store``: an output's element.

A stage lists them in that order (``Stage.statements``). The plan's kind gives the skeleton's shape:

- element-wise: ``main`` loads every input and scalar, runs every op and stores every output;
- reduce kernel: ``main`` runs the chain feeding the reduction for each element of a row (loading
  the inputs the chain reads and every scalar; no stores), ``reduce`` (``ReduceStage``) says which value is
  reduced how, and its ``post`` stage runs once per result: loads of the inputs the epilogue reads
  (at the result's position), the scalars it reads, the post ops, then the stored values;
- matmul epilogue: value 0 is the product element the matmul kernel holds; ``main`` loads the other
  inputs at the product's position, runs the ops and stores the outputs.

A ``Renderer`` subclass per language (WGSL in burn-wgpu, CUDA C in burn-cuda) spells statements in its
language; where each stage goes in a kernel (a grid-stride loop over a row, a matmul's register tile)
is that renderer's own template.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Sequence
from typing import NamedTuple

from .._dtype import DType
from ._plan import FusedKernel, FusedOp

# each reduction's identity: the accumulator's start value
IDENTITY = {"sum": 0.0, "mean": 0.0, "max": -math.inf, "min": math.inf}


class Load(NamedTuple):
    """Value ``value`` is the tensor input of that number (of ``dtype``), read at the kernel's position.

    >>> burn.fusion.Load(0, burn.float32).value
    0
    """

    value: int
    dtype: DType


class ScalarLoad(NamedTuple):
    """Value ``value`` is scalar input number ``scalar`` (of ``dtype``).

    >>> burn.fusion.ScalarLoad(2, 0, burn.float32).scalar
    0
    """

    value: int
    scalar: int
    dtype: DType


class Apply(NamedTuple):
    """Value ``value`` is ``op`` (kind, name, compute and out dtypes) applied to values ``op.args``.

    >>> f32 = burn.float32
    >>> burn.fusion.Apply(2, burn.fusion.FusedOp("binary", "add", f32, f32, (0, 1))).op.args
    (0, 1)
    """

    value: int
    op: FusedOp


class Store(NamedTuple):
    """Output ``output`` (of ``dtype``) is value ``value``, stored at the kernel's position.

    >>> burn.fusion.Store(0, 3, burn.float32).value
    3
    """

    output: int
    value: int
    dtype: DType


Statement = Load | ScalarLoad | Apply | Store


class Stage(NamedTuple):
    """Straight-line statements run at one position: loads, scalar loads, ops, stores.

    >>> f32 = burn.float32
    >>> ops = (burn.fusion.FusedOp("unary", "exp", f32, f32, (0,)),)
    >>> plan = burn.fusion.FusedKernel((4,), (f32,), (), ops, (1,))
    >>> [type(s).__name__ for s in burn.fusion.skeleton(plan).main.statements]
    ['Load', 'Apply', 'Store']
    """

    loads: tuple[Load, ...]
    scalars: tuple[ScalarLoad, ...]
    ops: tuple[Apply, ...]
    stores: tuple[Store, ...]

    @property
    def statements(self) -> tuple[Statement, ...]:
        """Every statement, in the order they run."""
        return (*self.loads, *self.scalars, *self.ops, *self.stores)


class ReduceStage(NamedTuple):
    """A reduce kernel's reduction: value ``value`` (per element, of the chain) is reduced by ``op``
    (sum, mean, max or min) from ``identity`` into value ``reduced`` (of ``dtype``; a mean divides
    by the row length), then ``post`` runs once per result.

    >>> f32 = burn.float32
    >>> red = burn.fusion.FusedReduce("max", (0,), False)
    >>> plan = burn.fusion.FusedKernel((4,), (f32,), (), (), (0,), reduce=red)
    >>> r = burn.fusion.skeleton(plan).reduce
    >>> r.op, r.value, r.reduced, r.identity
    ('max', 0, 1, -inf)
    """

    op: str
    value: int
    reduced: int
    dtype: DType
    identity: float
    post: Stage


class Skeleton(NamedTuple):
    """A plan as stages of statements (see the module docstring): ``main`` runs per element of the
    iteration; ``reduce`` is set for a reduce kernel; ``matmul``: value 0 is the product element.

    >>> f32 = burn.float32
    >>> ops = (burn.fusion.FusedOp("binary", "mul", f32, f32, (0, 1)),)
    >>> sk = burn.fusion.skeleton(burn.fusion.FusedKernel((4,), (f32,), (f32,), ops, (2,)))
    >>> sk.main.scalars, sk.stores
    ((ScalarLoad(value=1, scalar=0, dtype=burn.float32),), (Store(output=0, value=2, dtype=burn.float32),))
    """

    plan: FusedKernel
    main: Stage
    reduce: ReduceStage | None = None

    @property
    def matmul(self) -> bool:
        """Whether value 0 is a matmul's product element (a matmul epilogue)."""
        return self.plan.matmul

    @property
    def stores(self) -> tuple[Store, ...]:
        """What the kernel writes: ``main``'s stores, or a reduce kernel's per-result stores."""
        return self.main.stores if self.reduce is None else self.reduce.post.stores


def _apply(ops: Sequence[FusedOp], first: int) -> tuple[Apply, ...]:
    return tuple(map(Apply, range(first, first + len(ops)), ops))


def skeleton(plan: FusedKernel) -> Skeleton:
    """The skeleton of ``plan`` (made once per plan and kept in ``plan.cache``).

    >>> f32 = burn.float32
    >>> ops = (burn.fusion.FusedOp("binary", "sub", f32, f32, (1, 0)),)
    >>> sk = burn.fusion.skeleton(burn.fusion.FusedKernel((2, 3), (f32, f32), (), ops, (2,)))
    >>> [s.value for s in sk.main.statements]
    [0, 1, 2, 2]
    """
    made = plan.cache.get("skeleton")
    if made is not None:
        return made
    inputs, first = plan.inputs, plan.first_op
    nsc = len(plan.scalars)
    scalars = tuple(map(ScalarLoad, range(len(inputs), first), range(nsc), plan.scalars))
    ops = _apply(plan.ops, first)
    red = plan.reduce
    if red is None:
        loads = tuple(map(Load, range(len(inputs)), inputs))
        if plan.matmul:  # value 0 is the product the matmul kernel holds, not loaded
            loads = loads[1:]
        stores = tuple(map(Store, range(len(plan.outputs)), plan.outputs, plan.out_dtypes()))
        made = Skeleton(plan, Stage(loads, scalars, ops, stores))
    else:
        pre = red.pre_reads(plan)
        main = Stage(tuple(Load(k, dt) for k, dt in enumerate(inputs) if k in pre), scalars, ops, ())
        reads = red.post_reads()
        reduced = red.reduced_value(plan)
        post = Stage(
            tuple(Load(k, dt) for k, dt in enumerate(inputs) if k in reads),
            tuple(s for s in scalars if s.value in reads),
            _apply(red.post, reduced + 1),
            tuple(Store(j, v, dt) for j, (v, dt) in enumerate(zip(red.stores(plan), red.store_dtypes(plan)))),
        )
        value = plan.outputs[0]
        stage = ReduceStage(red.op, value, reduced, plan.out_dtypes()[0], IDENTITY[red.op], post)
        made = Skeleton(plan, main, stage)
    plan.cache["skeleton"] = made
    return made


def _nowhere(k: int) -> str:
    raise ValueError("no place given for this kind of statement")


class Renderer(ABC):
    """How one language spells a skeleton's statements (tinygrad's renderer): one subclass per
    language supplies the hooks below; ``lines`` spells a run of statements through them, and the
    subclass's kernel templates place each stage (with the launch layout its backend runs).

    A Python renderer (the numpy meaning of each statement) in a few lines:

    >>> class Py(burn.fusion.Renderer):
    ...     def type(self, dtype): return dtype.name
    ...     def storage(self, dtype): return dtype.name
    ...     def expression(self, op): return {"add": "a + b", "exp": "np.exp(a)"}[op.name]
    ...     def apply(self, s):
    ...         a, b = [self.value(v) for v in s.op.args] + ["None"] * (2 - len(s.op.args))
    ...         return f"a, b = {a}, {b}; {self.value(s.value)} = {self.expression(s.op)}"
    ...     def load(self, s, element): return f"{self.value(s.value)} = {element}"
    ...     def scalar(self, s, element): return f"{self.value(s.value)} = {element}"
    ...     def store(self, s, element): return f"{element} = {self.value(s.value)}"
    ...     def index(self, names, rank, position, meta): return []
    ...     def literal(self, x, dtype): return repr(x)
    ...     def params(self, sk): return [f"in{s.value}" for s in sk.main.loads]
    >>> f32, Op = burn.float32, burn.fusion.FusedOp
    >>> ops = (Op("unary", "exp", f32, f32, (0,)), Op("binary", "add", f32, f32, (2, 1)))
    >>> sk = burn.fusion.skeleton(burn.fusion.FusedKernel((2,), (f32,), (f32,), ops, (3,)))
    >>> where = (lambda k: f"x{k}", lambda j: f"s{j}", lambda j: f"out[{j}]")
    >>> code = Py().lines(sk.main.statements, *where)
    >>> env = {"np": np, "x0": np.zeros(2), "s0": 1.0, "out": [None]}
    >>> exec("\\n".join(code), env)
    >>> env["out"][0].tolist()
    [2.0, 2.0]
    """

    def value(self, v: int) -> str:
        """The name of value ``v``."""
        return f"v{v}"

    @abstractmethod
    def type(self, dtype: DType) -> str:
        """The type a value of ``dtype`` is computed and held in."""

    @abstractmethod
    def storage(self, dtype: DType) -> str:
        """The element type of a tensor of ``dtype`` in memory."""

    @abstractmethod
    def expression(self, op: FusedOp) -> str:
        """``op``'s expression over its operands ``a``, ``b``, ``c`` (the language's expression table)."""

    @abstractmethod
    def apply(self, stmt: Apply) -> str:
        """The code computing ``stmt.value`` by ``stmt.op`` from its operand values."""

    @abstractmethod
    def load(self, stmt: Load, element: str) -> str:
        """The code reading ``element`` (the input's element, spelled by the template) as the value."""

    @abstractmethod
    def scalar(self, stmt: ScalarLoad, element: str) -> str:
        """The code reading the scalar from ``element`` (where the template keeps it) as the value."""

    @abstractmethod
    def store(self, stmt: Store, element: str) -> str:
        """The code writing the value into ``element`` (the output's element)."""

    @abstractmethod
    def index(self, names: Sequence[str], rank: int, position: str, meta: str) -> list[str]:
        """Code giving each tensor of ``names`` its element offset at flat ``position`` of a rank
        ``rank`` iteration (broadcast dims stride 0), from the shape and strides at ``meta`` (where
        the language's kernel keeps them)."""

    @abstractmethod
    def literal(self, x: float, dtype: DType) -> str:
        """The constant ``x`` (infinities included) as a value of ``dtype``."""

    @abstractmethod
    def params(self, sk: Skeleton) -> list[str]:
        """The kernel's declarations of ``sk``'s tensors and scalars (parameters or bindings)."""

    def lines(
        self,
        statements: Iterable[Statement],
        load_at: Callable[[int], str] = _nowhere,
        scalar_at: Callable[[int], str] = _nowhere,
        store_at: Callable[[int], str] = _nowhere,
    ) -> list[str]:
        """Each statement spelled through the hooks, in order: ``load_at(k)``, ``scalar_at(j)`` and
        ``store_at(j)`` spell where input ``k``'s element, scalar ``j`` and output ``j``'s element are
        (a run without loads, say, needs no ``load_at``)."""
        out = []
        for s in statements:
            if type(s) is Apply:
                out.append(self.apply(s))
            elif type(s) is Load:
                out.append(self.load(s, load_at(s.value)))
            elif type(s) is ScalarLoad:
                out.append(self.scalar(s, scalar_at(s.scalar)))
            else:
                assert type(s) is Store
                out.append(self.store(s, store_at(s.output)))
        return out
