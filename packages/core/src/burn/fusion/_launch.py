"""Launching, the third stage of fusion: the kernels planning chose, run on the runtime.

``Launching._launch`` runs one kernel (its plan from ``Planning._kernel_plan``) and hands each written
value to its node; ``_run_group`` splits a group of writes that needs more bindings than the runtime
allows into kernels that fit; ``_run_call`` runs a call on the inner backend. Every launch at planning
time is also told to the program recorder (``_Recorder``), so the programs stage can replay it.

``launch`` (``Fusion.launch`` and ``burn.fusion.launch``) is the other way in: a whole ``FusedKernel``
a caller built (an optimizer's update of one param) recorded as one node of the stream.
"""

from __future__ import annotations

import weakref
from collections.abc import Sequence

from .._tensor import Tensor, _wrap  # at the top: an import in ``launch`` cost ~2 us a call
from ..backend import Backend, broadcast_shape
from ._graph import FPrim, Node, lazy_handle, results
from ._plan import FusedKernel, FusedReduce, FusionRuntime
from ._planner import Planning, _closure, _lazy_args, _reads
from ._reference import ReferenceRuntime
from ._stream import KERNEL_CALL, Scalar, _call_node, _values_of


class Launching(Planning):
    """Runs kernels and calls for the planner, and records kernels callers built (``launch``)."""

    def __init__(self, inner: Backend, runtime: FusionRuntime | None) -> None:
        super().__init__(inner, runtime)
        self._kernels: list[FusedKernel] = []  # plans ``launch`` recorded, by their signature number

    # ------------------------------------------------------------------ kernels the planner chose
    def _launch(
        self,
        outs: list[Node],
        order: list[Node] | None = None,
        reduce: tuple[Node, FusedReduce] | None = None,
        matmul: Node | None = None,
        post: tuple[list[Node], list[Node]] | None = None,
    ) -> bool:
        """Run one kernel writing ``outs``; False (nothing run) when it would need too many bindings.
        ``order``: the closure of ``outs`` when the caller has it. ``reduce``: (the reduce call, its
        reduction): a reduce kernel whose one output ``outs[0]`` is reduced into the call's node.
        ``matmul``: a matmul call (its operands computed) whose product the ops read as input 0.
        ``post``: with ``reduce``, (the epilogue's nodes, the nodes it stores: the call's and theirs)."""
        if order is None:
            order = _closure(outs)
        planned = self._kernel_plan(outs, order, reduce, matmul, post)
        if planned is None:
            return False
        plan, operands, scalars = planned
        if matmul is not None:
            operands[:1] = [a for a in matmul.args if type(a) is Node]  # the product's operands
        values = self.runtime.execute(plan, [i.value for i in operands], scalars)
        written = outs if reduce is None else [reduce[0]] if post is None else post[1]
        if self._rec is not None:
            self._rec.kernel(plan, operands, order if post is None else [*order, *post[0]], written)
        for node, value in zip(written, values):
            node.done(value)
        self.stats["kernels"] += 1
        if plan.fused:
            self.stats["fused"] += 1
        return True

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

    def _run_call(self, n: Node) -> None:
        """Run lazy call ``n`` (its operands computed) under the settings it was called in."""
        method = self._calls[n.op[1]]  # type: ignore[index]  # a lazy call
        if n.compute is None:
            out = method(*_values_of(n.args))
        else:
            with self.inner.call_state_scope(n.compute):
                out = method(*_values_of(n.args))
        if n.twin is None:
            n.done(out)
        else:
            for node, value in zip(results(n), out):
                node.done(value)

    # ------------------------------------------------------------------ whole kernels callers built
    def launch(self, plan: FusedKernel, inputs: Sequence[FPrim], scalars: Sequence[Scalar]) -> list[FPrim]:
        """Record ``plan`` (an element-wise kernel with one output or several) over ``inputs`` as one
        node of the stream: it runs as one kernel of its own when the stream is planned, and replays
        like any other (its scalars are arguments, not part of the signature). Code that knows a whole
        update (an optimizer's step of one param) records it here at the cost of one op instead of a
        dozen. Where the runtime cannot render an op of the plan, or the plan needs more bindings or
        ops than a kernel may have, the plan's ops are recorded one by one instead (and may fuse with
        their neighbours)."""
        ok = plan.cache.get(self)
        if ok is None:
            rt = self.runtime
            ok = (
                plan.reduce is None
                and not plan.matmul
                and len(plan.inputs) + len(plan.outputs) <= rt.max_tensors
                and len(plan.ops) <= rt.max_ops
                and all(self._can(o.kind, o.name, o.compute, o.out) for o in plan.ops)
            )
            plan.cache[self] = ok
            if ok:
                self._kernels.append(plan)  # numbered for the signature; kept, so the number stays its own
                plan.cache[(self, "number")] = len(self._kernels) - 1
        if len(inputs) != len(plan.inputs) or len(scalars) != len(plan.scalars):
            raise ValueError(
                f"Fusion.launch: the plan takes {len(plan.inputs)} tensors and {len(plan.scalars)} "
                f"scalars, got {len(inputs)} and {len(scalars)}"
            )
        shape = plan.shape
        for i, (p, dt) in enumerate(zip(inputs, plan.inputs)):
            n = p.node
            if n.dtype is not dt or (n.shape != shape and not _broadcasts_to(n.shape, shape)):
                raise ValueError(
                    f"Fusion.launch: input {i} is {n.dtype.name}{list(n.shape)}, the plan expects "
                    f"{dt.name} broadcasting to {list(shape)}"
                )
        if not ok:
            return ReferenceRuntime(self).execute(plan, list(inputs), list(scalars))
        if self._cut and len(self._stream) == self._cut:
            self.flush()
        operands = [p.node for p in inputs]
        dtypes = plan.out_dtypes()
        first = _call_node(shape, dtypes[0], KERNEL_CALL, (*operands, *scalars))
        first.compute = plan
        stream, sig = self._stream, self._sig
        sig.append(KERNEL_CALL)
        sig.append(plan.cache[(self, "number")])
        for a in operands:
            self._operand(a, sig)
        first.sbase = len(self._scalars)
        self._scalars += scalars
        first.pos = len(stream)
        stream.append(first)
        out = [lazy_handle(first)]
        for dt in dtypes[1:]:  # the other outputs follow it in the stream; it computes them
            n = _call_node(shape, dt, KERNEL_CALL, (first,))
            n.pos = len(stream)
            stream.append(n)
            out.append(lazy_handle(n))
        self.stats["calls"] += 1
        self._recorded(len(stream))
        return out

    def _run_kernel_call(self, n: Node, stream: list[Node]) -> None:
        """Run a node ``launch`` recorded (its inputs computed): the plan's kernel, writing its outputs
        (the node and the ones after it in the stream)."""
        plan: FusedKernel = n.compute
        k = len(plan.inputs)
        operands: list[Node] = n.args[:k]  # type: ignore[assignment]  # nodes, then the scalars
        values = self.runtime.execute(plan, [a.value for a in operands], list(n.args[k:]))
        outs = stream[n.pos : n.pos + len(values)]
        if self._rec is not None:
            self._rec.kernel(plan, operands, [n], outs)
        for node, value in zip(outs, values):
            node.done(value)
        self.stats["kernels"] += 1
        if plan.fused:
            self.stats["fused"] += 1


def _broadcasts_to(shape: tuple[int, ...], target: tuple[int, ...]) -> bool:
    try:
        return broadcast_shape(shape, target) == target
    except ValueError:
        return False


def launch(plan: FusedKernel, inputs: Sequence[Tensor], scalars: Sequence[Scalar] = ()) -> list[Tensor]:
    """Run ``plan`` (an element-wise kernel with one output or several; see ``FusedKernel``) over
    ``inputs`` (tensors of one device, in the plan's input order, each broadcasting to its shape) and
    ``scalars``; one tensor per output. On a fusion device the whole plan is one node of the stream
    and runs as one kernel (``Fusion.launch``); on plain ``cpu`` as one compiled kernel too where a C
    compiler works (after a plan has run ``BURN_CPU_NATIVE_AFTER`` times); elsewhere, and on autodiff
    devices (so gradients flow), its ops run one by one. The optimizers run each param's update through it.

    >>> from burn.fusion import FusedKernel, FusedOp
    >>> f32 = burn.float32
    >>> ops = (FusedOp("binary", "mul", f32, f32, (0, 2)), FusedOp("binary", "add", f32, f32, (3, 1)))
    >>> plan = FusedKernel((2,), (f32, f32), (f32,), ops, (4, 3))   # (a * s + b, a * s)
    >>> dev = burn.device("cpu", fusion=True)
    >>> a, b = burn.tensor([1.0, 2.0], device=dev), burn.tensor([10.0, 20.0], device=dev)
    >>> [t.tolist() for t in burn.fusion.launch(plan, [a, b], [3.0])]
    [[13.0, 26.0], [3.0, 6.0]]
    """
    if not inputs or any(type(t) is not Tensor for t in inputs):
        raise TypeError("burn.fusion.launch: inputs must be a non-empty sequence of burn Tensors")
    b = inputs[0]._b
    if any(t._b is not b for t in inputs):
        raise ValueError(
            f"burn.fusion.launch: inputs must share one device, got {sorted({str(t.device) for t in inputs})}"
        )
    prims = [t._p for t in inputs]
    if isinstance(b, Launching):  # a fusion backend
        outs = b.launch(plan, prims, scalars)
    else:
        runtime = _REFERENCE.get(b)
        if runtime is None:
            runtime = _REFERENCE[b] = _plain_runtime(b)
        if len(prims) != len(plan.inputs) or len(scalars) != len(plan.scalars):
            raise ValueError(
                f"burn.fusion.launch: the plan takes {len(plan.inputs)} tensors and {len(plan.scalars)} "
                f"scalars, got {len(prims)} and {len(scalars)}"
            )
        outs = runtime.execute(plan, prims, list(scalars))
    return [_wrap(p, b, dt) for p, dt in zip(outs, plan.out_dtypes())]


def _plain_runtime(b: Backend) -> ReferenceRuntime:
    """What runs a launched plan on a backend without the fusion decorator: a host-memory backend's
    own fusion runtime where it has one (the cpu device's compiled C kernels: an optimizer's update is
    one pass over memory instead of a dozen numpy calls), else the plan's ops one by one. A device
    backend's runtime is left to its fusion decorator (it may expect the decorator's buffers)."""
    runtime = b.fusion_runtime() if b.host_memory else None
    return runtime if isinstance(runtime, ReferenceRuntime) else ReferenceRuntime(b)


_REFERENCE: weakref.WeakKeyDictionary[Backend, ReferenceRuntime] = weakref.WeakKeyDictionary()
