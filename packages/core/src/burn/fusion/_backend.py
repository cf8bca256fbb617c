"""``Fusion(inner)``: a backend decorator that defers element-wise ops and runs chains of them as one
generated kernel (Burn's burn-fusion).

Element-wise ops (unary, activations, binary with broadcasting and scalars, where, clamp, casts) build
lazy ``Node``s and launch nothing. Any other op, a read, a sync or a long stream *materialises* what
it needs: the planner takes the lazy nodes behind the values asked for, writes only those still held
by a tensor (the rest are intermediates computed in registers), groups the writes by shape into
kernels within the runtime's binding and size limits, and hands each kernel's plan to the inner
backend's ``FusionRuntime`` (a WGSL or CUDA renderer with a compile cache keyed by the plan without
its shape, so a repeated step reuses its kernels). Ops the runtime cannot render run eagerly.

Every other op (matmul, reductions, conv, indexing, shape ops, ...) runs on the inner backend with
computed inputs, except the contract defaults made mostly of element-wise ops (softmax, leaky_relu,
var, ...): where the inner backend has no kernel of its own for them, they run composed here, so their
element-wise parts fuse too.

Like the GPU backends it wraps, a fusion backend takes its ops from one thread at a time.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from .._dtype import DType, bool_
from ..backend import ACTIVATION_OPS, BINARY_OPS, COMPARISON_OPS, UNARY_BOOL_RESULT, Backend, broadcast_shape
from ..backend._vocabulary import OPS
from ._graph import FPrim, Node, lazy_handle, wanted
from ._plan import FusedKernel, FusedOp, FusionRuntime
from ._reference import ReferenceRuntime

if TYPE_CHECKING:
    import numpy as np

    from .._device import Device

Scalar = bool | int | float
PENDING_LIMIT = 4096  # lazy handles tracked before the stream is flushed as a whole

# methods with their own code here; every other op method is forwarded or composed (see __init__)
_OWN = frozenset(
    {
        "unary",
        "activation",
        "binary",
        "where",
        "clamp",
        "cast",
        "from_numpy",
        "to_numpy",
        "read_many",
        "shape_of",
        "dtype_of",
        "sync",
        "counters",
    }
)
_OP_METHODS = sorted({d.method for d in OPS.values()} - _OWN)
# contract defaults made mostly of element-wise ops: where the inner backend has no kernel of its own,
# they run composed here so their element-wise parts fuse; every other op runs on the inner backend
# (a composition of shape and index ops gains nothing here and would pay the deferral per op)
_COMPOSED_HERE = frozenset(
    {"softmax", "log_softmax", "leaky_relu", "var", "mask_fill", "tril", "triu", "one_hot"}
)
_TWO_OUTPUTS = frozenset(d.method for d in OPS.values() if d.outputs == 2)


class Fusion(Backend):
    """The fusion decorator over ``inner``; ``burn.device(name, fusion=True)`` builds one (on by
    default on GPU backends; ``fusion=False`` or ``BURN_FUSION=0`` turns it off).

    ``runtime``: the kernel generator (default: ``inner.fusion_runtime()``, else the reference
    runtime, which runs plans op by op). ``stats`` counts ``kernels`` launched from plans, ``fused``
    (those of two ops or more), ``ops`` (element-wise ops deferred) and ``flushes``.

    >>> dev = burn.device("cpu", fusion=True)
    >>> ((burn.ones(3, device=dev) * 2).exp() + 1).shape
    (3,)
    """

    is_autodiff = False
    native_activations = ACTIVATION_OPS  # every activation reaches unary(), which fuses or forwards it

    def __init__(
        self, inner: Backend, device: Device | None = None, runtime: FusionRuntime | None = None
    ) -> None:
        if getattr(inner, "is_autodiff", False):
            raise TypeError(
                f"Fusion: the inner backend {inner!r} is an autodiff backend; autodiff wraps fusion"
            )
        self.inner = inner
        if device is not None:
            self.device = device
        self.name = inner.name  # transparent: messages name the backend users picked
        self.dtypes = inner.dtypes
        self.default_float = inner.default_float
        self.default_int = inner.default_int
        self.runtime: FusionRuntime = runtime or inner.fusion_runtime() or ReferenceRuntime(inner)
        self.stats = {"kernels": 0, "fused": 0, "ops": 0, "flushes": 0}
        self._pending: list[Any] = []  # weakrefs to the handles of lazy nodes (see _defer)
        self._fusable: dict[tuple[str, str, DType, DType], bool] = {}
        self._plans: dict[tuple[Any, ...], FusedKernel] = {}
        self.binary_fns = {op: functools.partial(self.binary, op) for op in BINARY_OPS}
        base = type(inner)
        for name in _OP_METHODS:
            if name not in _COMPOSED_HERE or getattr(base, name, None) is not getattr(Backend, name, None):
                setattr(self, name, self._forwarder(name))

    def __repr__(self) -> str:
        return f"<Fusion({type(self.inner).__name__}) {self.device}>"

    # ------------------------------------------------------------------ values in and out
    def _wrap(self, value: Any) -> FPrim:
        inner = self.inner
        return FPrim(Node(tuple(inner.shape_of(value)), inner.dtype_of(value), value))

    def _values(self, prims: Sequence[FPrim]) -> list[Any]:
        """The inner primitives of ``prims``, materialising the lazy ones together (one plan)."""
        lazy = [p.node for p in prims if p.node.op is not None]
        if lazy:
            self._execute(lazy)
        return [p.node.value for p in prims]

    def _forwarder(self, name: str) -> Callable[..., Any]:
        method = getattr(self.inner, name)
        pair = name in _TWO_OUTPUTS

        def forward(*args: Any) -> Any:
            lazy: list[Node] = []
            _collect(args, lazy)
            if lazy:
                self._execute(lazy)
            out = method(*_unwrap(args))
            if pair:
                return self._wrap(out[0]), self._wrap(out[1])
            return self._wrap(out)

        forward.__name__ = name
        return forward

    def from_numpy(self, array: np.ndarray, dtype: DType) -> FPrim:
        return self._wrap(self.inner.from_numpy(array, dtype))

    def to_numpy(self, x: FPrim) -> np.ndarray:
        return self.inner.to_numpy(self._values([x])[0])

    def read_many(self, xs: Sequence[FPrim]) -> list[np.ndarray]:
        return self.inner.read_many(self._values(xs))

    def shape_of(self, x: FPrim) -> tuple[int, ...]:
        return x.node.shape

    def dtype_of(self, x: FPrim) -> DType:
        return x.node.dtype

    def sync(self) -> None:
        self.flush()
        self.inner.sync()

    def counters(self) -> dict[str, int]:
        counts = dict(self.inner.counters())
        counts["fused"] = counts.get("fused", 0) + self.stats["fused"]
        return counts

    def inner_prim(self, p: FPrim) -> Any:
        """The inner backend's primitive of ``p`` (computed first when it is lazy)."""
        return self._values([p])[0]

    def from_inner(self, value: Any) -> FPrim:
        """A handle on an inner primitive (interop: arrays another library made)."""
        return self._wrap(value)

    def fusion_runtime(self) -> FusionRuntime | None:
        return None  # fusion does not stack on itself

    def flush(self) -> None:
        """Run every deferred op whose value a tensor still holds."""
        targets = [p.node for p in (r() for r in self._pending) if p is not None and p.node.op is not None]
        self._pending = []
        if targets:
            self._execute(targets)

    # ------------------------------------------------------------------ element-wise (deferred)
    def _can(self, kind: str, name: str, compute: DType, out: DType) -> bool:
        key = (kind, name, compute, out)
        ok = self._fusable.get(key)
        if ok is None:
            ok = self._fusable[key] = bool(self.runtime.fusable(kind, name, compute, out))
        return ok

    def _defer(
        self,
        kind: str,
        name: str,
        args: tuple[Any, ...],
        shape: tuple[int, ...],
        dtype: DType,
        compute: DType,
    ) -> FPrim:
        operands = tuple(a.node if type(a) is FPrim else a for a in args)
        node = Node(shape, dtype, None, (kind, name), operands, compute)
        rt = self.runtime
        while node.size > rt.max_ops or node.nleaves >= rt.max_tensors:
            big = [a for a in node.args if type(a) is Node and a.op is not None]
            if not big:
                break
            self._execute([max(big, key=lambda a: (a.nleaves, a.size))])
            node = Node(shape, dtype, None, (kind, name), node.args, compute)
        p = lazy_handle(node)
        self.stats["ops"] += 1
        pending = self._pending
        pending.append(node.handle)
        if len(pending) > PENDING_LIMIT:
            self._pending = [r for r in pending if (q := r()) is not None and q.node.op is not None]
            if len(self._pending) > PENDING_LIMIT // 2:
                self.flush()
        return p

    def unary(self, op: str, x: FPrim) -> FPrim:
        dt = x.node.dtype
        out = bool_ if op in UNARY_BOOL_RESULT else dt
        if self._can("unary", op, dt, out):
            return self._defer("unary", op, (x,), x.node.shape, out, dt)
        inner = self.inner
        if op in ACTIVATION_OPS and op not in inner.native_activations:
            from ..backend._activation_defaults import ACTIVATION_DEFAULTS

            return ACTIVATION_DEFAULTS[op](self, x)  # its pieces may fuse
        return self._wrap(inner.unary(op, self._values([x])[0]))

    def binary(self, op: str, a: FPrim | Scalar, b: FPrim | Scalar) -> FPrim:
        if type(a) is FPrim:
            dt = a.node.dtype
            shape = a.node.shape if type(b) is not FPrim else broadcast_shape(a.node.shape, b.node.shape)
        else:
            assert type(b) is FPrim, "binary: one operand is a tensor (the frontend's contract)"
            dt, shape = b.node.dtype, b.node.shape
        out = bool_ if op in COMPARISON_OPS else dt
        if self._can("binary", op, dt, out):
            return self._defer("binary", op, (a, b), shape, out, dt)
        return self._wrap(self.inner.binary(op, *_eager(self, (a, b))))

    def where(self, cond: FPrim, a: FPrim | Scalar, b: FPrim | Scalar) -> FPrim:
        tensors = [t for t in (a, b) if type(t) is FPrim]
        if tensors:
            dt = tensors[0].node.dtype
            shape = broadcast_shape(cond.node.shape, *(t.node.shape for t in tensors))
            if self._can("where", "where", dt, dt):
                return self._defer("where", "where", (cond, a, b), shape, dt, dt)
        return self._wrap(self.inner.where(*_eager(self, (cond, a, b))))

    def clamp(self, x: FPrim, lo: float | int | None, hi: float | int | None) -> FPrim:
        dt = x.node.dtype
        if lo is None or hi is None or not self._can("clamp", "clamp", dt, dt):
            return super().clamp(x, lo, hi)  # maximum/minimum: deferred where they can be
        return self._defer("clamp", "clamp", (x, lo, hi), x.node.shape, dt, dt)

    def cast(self, x: FPrim, dtype: DType) -> FPrim:
        src = x.node.dtype
        if dtype is src:
            return x
        if self._can("cast", dtype.name, src, dtype):
            return self._defer("cast", dtype.name, (x,), x.node.shape, dtype, src)
        return self._wrap(self.inner.cast(self._values([x])[0], dtype))

    # ------------------------------------------------------------------ planning
    def _execute(self, targets: list[Node]) -> None:
        """Compute ``targets`` (lazy nodes) and every lazy node behind them that a tensor still holds."""
        order = _closure(targets)
        outs = set(targets)
        outs.update(n for n in order if wanted(n))
        groups: dict[tuple[int, ...], list[Node]] = {}
        for n in order:
            if n in outs:
                groups.setdefault(n.shape, []).append(n)
        self.stats["flushes"] += 1
        if len(groups) == 1:  # the targets are in the one group, so its closure is ``order``
            (group,) = groups.values()
            if not self._launch(group, order):
                self._run_group(group)
            return
        # an element-wise op's shape never has fewer elements or dims than its operands': this order
        # runs every group after the groups its inputs come from
        for shape in sorted(groups, key=lambda s: (math.prod(s), len(s))):
            self._run_group(groups[shape])

    def _run_group(self, outs: list[Node]) -> None:
        """Launch kernels writing ``outs`` (lazy nodes of one shape, in creation order): one kernel when
        the runtime's binding limit allows, else greedy chunks."""
        outs = [o for o in outs if o.op is not None]  # a split below may have computed some
        if not outs:
            return
        if self._launch(outs):
            return
        limit = self.runtime.max_tensors
        chunk: list[Node] = []
        reads: set[Node] = set()
        for o in outs:
            if o.op is None:
                continue
            mine = _reads([o])
            while len(mine) + 1 > limit:  # too many inputs for one kernel: compute a part first
                self._execute([max(_lazy_args(o), key=lambda a: len(_reads([a])))])
                mine = _reads([o])
            if chunk and len(reads | mine) + len(chunk) + 1 > limit:
                self._launch(chunk)
                chunk, reads = [], set()
                mine = _reads([o])
            chunk.append(o)
            reads |= mine
        if chunk:
            self._launch(chunk)

    def _launch(self, outs: list[Node], order: list[Node] | None = None) -> bool:
        """Run one kernel writing ``outs``; False (nothing run) when it would need too many bindings.
        ``order``: the closure of ``outs`` when the caller has it."""
        if order is None:
            order = _closure(outs)
        # one walk builds the plan's signature: inputs as -1-k, ops by position, scalars as None in
        # order (each kind has a fixed arity); equal signatures share one FusedKernel and so the
        # runtime's compiled kernel: a repeated step plans nothing beyond this walk
        inputs: dict[Node, int] = {}
        scalars: list[Scalar] = []
        scalar_dtypes: list[DType] = []
        number: dict[Node, int] = {}
        sig: list[Any] = [outs[0].shape]
        for j, n in enumerate(order):
            number[n] = j
            sig += n.op  # type: ignore[arg-type]  # lazy
            sig.append(n.compute)
            sig.append(n.dtype)
            for a in n.args:
                if type(a) is Node:
                    if a.op is None:
                        k = inputs.get(a)
                        if k is None:
                            k = inputs[a] = len(inputs)
                        sig.append(-1 - k)
                    else:
                        sig.append(number[a])
                else:
                    scalars.append(a)  # type: ignore[arg-type]  # not a Node: a scalar
                    scalar_dtypes.append(n.compute)  # type: ignore[arg-type]  # set on every lazy node
                    sig.append(None)
        if len(inputs) + len(outs) > self.runtime.max_tensors:
            return False
        sig += [i.dtype for i in inputs]
        sig += [number[o] for o in outs]
        key = tuple(sig)
        plan = self._plans.get(key)
        if plan is None:
            plan = self._plans[key] = _make_plan(order, inputs, scalar_dtypes, outs)
        values = self.runtime.execute(plan, [i.value for i in inputs], scalars)
        for node, value in zip(outs, values):
            node.done(value)
        self.stats["kernels"] += 1
        if len(order) > 1:
            self.stats["fused"] += 1
        return True


def _make_plan(
    order: list[Node], inputs: dict[Node, int], scalar_dtypes: list[DType], outs: list[Node]
) -> FusedKernel:
    """The FusedKernel of one launch: values numbered inputs, scalars, then ops (``_plan``)."""
    first = len(inputs) + len(scalar_dtypes)
    number = {n: first + j for j, n in enumerate(order)}
    ops = []
    k = len(inputs)
    for n in order:
        args = []
        for a in n.args:
            if type(a) is Node:
                args.append(inputs[a] if a.op is None else number[a])
            else:
                args.append(k)
                k += 1
        kind, name = n.op  # type: ignore[misc]  # lazy
        ops.append(FusedOp(kind, name, n.compute, n.dtype, tuple(args)))  # type: ignore[arg-type]
    return FusedKernel(
        outs[0].shape,
        tuple(i.dtype for i in inputs),
        tuple(scalar_dtypes),
        tuple(ops),
        tuple(number[o] for o in outs),
    )


def _seq(n: Node) -> int:
    return n.seq


def _closure(roots: Sequence[Node]) -> list[Node]:
    """The lazy nodes behind ``roots`` (lazy themselves), in creation order: each after its operands."""
    seen: set[Node] = set()
    stack = list(roots)
    while stack:
        n = stack.pop()
        if n in seen:
            continue
        seen.add(n)
        for a in n.args:
            if type(a) is Node and a.op is not None and a not in seen:
                stack.append(a)
    return sorted(seen, key=_seq)


def _reads(roots: Sequence[Node]) -> set[Node]:
    """The computed nodes the expressions of ``roots`` read."""
    reads: set[Node] = set()
    for n in _closure(roots):
        for a in n.args:
            if type(a) is Node and a.op is None:
                reads.add(a)
    return reads


def _lazy_args(n: Node) -> list[Node]:
    return [a for a in n.args if type(a) is Node and a.op is not None]


def _collect(args: Any, lazy: list[Node]) -> None:
    for a in args:
        if type(a) is FPrim:
            if a.node.op is not None:
                lazy.append(a.node)
        elif isinstance(a, (list, tuple)):
            _collect(a, lazy)


def _unwrap(args: Any) -> Any:
    out = []
    for a in args:
        if type(a) is FPrim:
            out.append(a.node.value)
        elif isinstance(a, (list, tuple)) and any(
            type(v) is FPrim or isinstance(v, (list, tuple)) for v in a
        ):
            out.append(type(a)(_unwrap(a)))
        else:
            out.append(a)
    return out


def _eager(b: Fusion, args: tuple[Any, ...]) -> list[Any]:
    """``args`` with their tensors computed, for an op the runtime cannot render."""
    prims = [a for a in args if type(a) is FPrim]
    values = iter(b._values(prims))
    return [next(values) if type(a) is FPrim else a for a in args]
