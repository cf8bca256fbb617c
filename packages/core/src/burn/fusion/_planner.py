"""Planning, the second stage of fusion: a recorded stream grouped into kernels, the first time its
signature is seen.

Calls run in order; before each, the element-wise nodes it reads are computed; at the end, every node a
tensor still holds. Element-wise work is planned as kernels: only values a tensor holds (or a call
reads) are written, intermediates stay in registers, writes are grouped by shape (``_execute``) within
the runtime's binding and size limits (``Launching._run_group``). Where the runtime offers them
(``fuse_reduce``, ``fuse_matmul``; ``BURN_FUSION_ANCHORS=0`` turns them off), a sum/mean/max/min over
trailing dims of a lazy chain no tensor holds and no other call reads runs as one *reduce kernel*
computing the chain (the reduce prologue, ``_fused_reduce``; the element-wise chain reading its result
may run in it too, the epilogue), and a matmul whose product is read only by element-wise ops of its
shape runs them before its store (the matmul epilogue, ``_fused_matmul``).

The hand-off to launching is ``_kernel_plan``: the ``FusedKernel`` of one kernel (from the plan cache,
keyed by the kernel's signature, so a repeated step plans nothing beyond one walk), the nodes it reads
and its scalars; ``Launching._launch`` runs it.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from .._dtype import DType
from ..backend import Backend
from ._graph import Node, results, wanted
from ._plan import FusedKernel, FusedOp, FusedReduce, FusionRuntime
from ._stream import KERNEL_CALL, Recording, Scalar, _Failed, _flat

if TYPE_CHECKING:
    from ._program import _Recorder

_REDUCE_PROLOGUE = frozenset({"sum", "mean", "max", "min"})  # reductions a reduce kernel may run


class Planning(Recording):
    """Plans a stream (``_plan_stream``) and the kernels it runs (``_kernel_plan``); the launching
    stage (``Launching``) runs them."""

    def __init__(self, inner: Backend, runtime: FusionRuntime | None) -> None:
        super().__init__(inner, runtime)
        self._plans: dict[tuple[Any, ...], FusedKernel] = {}  # by kernel signature (``_kernel_plan``)
        self._rec: _Recorder | None = None  # set while a flush plans: what ran, to replay it
        # reduce kernels and matmul epilogues, where the runtime offers them (``FusionRuntime``;
        # ``BURN_FUSION_ANCHORS=0``: element-wise kernels only); looked up when a stream is planned
        self.anchors = os.environ.get("BURN_FUSION_ANCHORS", "1") != "0"
        self._fuse_reduce: Callable[..., bool] | None = None
        self._fuse_matmul: Callable[..., bool] | None = None

    # ------------------------------------------------------------------ what planning asks of launching
    def _launch(
        self,
        outs: list[Node],
        order: list[Node] | None = None,
        reduce: tuple[Node, FusedReduce] | None = None,
        matmul: Node | None = None,
        post: tuple[list[Node], list[Node]] | None = None,
    ) -> bool:
        """Run one kernel writing ``outs``; False when it would need too many bindings (``Launching``)."""
        raise NotImplementedError

    def _run_group(self, outs: list[Node]) -> None:
        """Run kernels writing ``outs``, lazy nodes of one shape (``Launching``)."""
        raise NotImplementedError

    def _run_call(self, n: Node) -> None:
        """Run lazy call ``n``, its operands computed (``Launching``)."""
        raise NotImplementedError

    def _run_kernel_call(self, n: Node, stream: list[Node]) -> None:
        """Run a node ``launch`` recorded, its inputs computed (``Launching``)."""
        raise NotImplementedError

    # ------------------------------------------------------------------ the stream
    def _plan_stream(self, stream: list[Node]) -> None:
        """Plan and run ``stream`` (the first time its signature is seen), recording what ran."""
        rec = self._rec
        rt = self.runtime
        self._fuse_reduce = getattr(rt, "fuse_reduce", None) if self.anchors else None
        self._fuse_matmul = getattr(rt, "fuse_matmul", None) if self.anchors else None
        readers = _users(stream)
        users = readers if self._fuse_reduce or self._fuse_matmul else None
        for n in stream:
            if n.op is None or n.op[0] != "call":
                continue  # computed by now, or element-wise (planned when something reads it)
            if users is not None:
                name = n.op[1]
                if name == "reduce" and self._fused_reduce(n, users, stream):
                    continue
            lazy = [a for a in _flat(n.args, Node) if a.op is not None]
            if lazy:
                self._execute(lazy)
            if n.op[1] == KERNEL_CALL:
                self._run_kernel_call(n, stream)
                continue
            if users is not None and n.op[1] == "matmul" and self._fused_matmul(n, users, stream):
                continue
            if rec is not None:
                rec.call(n)  # before it runs: running drops its operands
            self._run_call(n)
            # a result nothing in the stream reads and no tensor holds (a call run for its time alone)
            # goes now, not with the stream: a long stream of them held every one (a benchmark's
            # 4,096 unread 2048^2 products, 86 GB)
            for out in results(n):
                if out not in readers and not wanted(out):
                    out.done(None)
        targets = [n for n in stream if n.op is not None and wanted(n)]
        if targets:
            self._execute(targets)

    def _execute(self, targets: list[Node]) -> None:
        """Compute ``targets`` (lazy nodes) and every lazy node behind them that a tensor still holds."""
        order = _closure(targets)
        outs = set(targets)
        outs.update(n for n in order if wanted(n))
        groups: dict[tuple[int, ...], list[Node]] = {}
        for n in order:
            if n in outs:
                groups.setdefault(n.shape, []).append(n)
        if len(groups) == 1:  # the targets are in the one group, so its closure is ``order``
            (group,) = groups.values()
            if not self._launch(group, order):
                self._run_group(group)
            return
        # an element-wise op's shape never has fewer elements or dims than its operands': this order
        # runs every group after the groups its inputs come from
        for shape in sorted(groups, key=lambda s: (math.prod(s), len(s))):
            self._run_group(groups[shape])

    # ------------------------------------------------------------------ anchors: reductions, matmuls
    def _called_now(self, n: Node) -> bool:
        """Whether call ``n`` was recorded under the ambient settings in force now (``call_state``),
        so a kernel run now may stand in for it."""
        return n.compute is None or n.compute == self.inner.call_state()

    def _fused_reduce(self, n: Node, users: dict[Node, list[Node]], stream: list[Node]) -> bool:
        """Run reduce call ``n`` as a reduce kernel computing the element-wise chain it reads (the
        reduce prologue), where the chain is lazy, no tensor holds its result, no other call reads
        that and the runtime has the kernel; False (nothing run) otherwise. The element-wise chain
        reading the result (the reduce epilogue, ``_post_chain``) runs in the same kernel. A
        reduction called under ambient settings other than the ones in force now (``call_state``:
        burn-cuda's matmul precision, recorded with every call) runs as recorded, under them."""
        fuse = self._fuse_reduce
        args: tuple[Any, ...] = n.args
        op, x, dims, keepdim = args
        if (
            fuse is None
            or not self._called_now(n)
            or op not in _REDUCE_PROLOGUE
            or type(x) is not Node
            or not x.dtype.is_float
            or n.dtype is not x.dtype
        ):
            return False
        if x.op is None:  # computed: a reduce kernel of no ops still saves a mean's divide
            if op != "mean" or type(x.value) is _Failed:
                return False
        elif (
            x.op[0] == "call"
            or wanted(x)
            or any(u.op is not None and u.op[0] == "call" and u is not n for u in users.get(x, ()))
        ):
            return False
        rank = len(x.shape)
        dims = tuple(dims)
        if not dims or dims != tuple(range(rank - len(dims), rank)) or not fuse(op, n.dtype, x.shape, dims):
            return False
        order = _closure([x]) if x.op is not None else []
        held = [m for m in order if wanted(m)]
        if held:  # values a tensor holds are written anyway: by a kernel of their own, first
            self._execute(held)
            order = _closure([x])
        if len(order) > self.runtime.max_ops:
            return False
        red = FusedReduce(op, dims, bool(keepdim))
        chain = self._post_chain(n, users, stream) if getattr(self.runtime, "reduce_epilogues", False) else []
        while chain:  # too many bindings or ops: a shorter prefix of the epilogue
            part = set(chain)
            stores = [v for v in (n, *chain) if wanted(v) or any(u not in part for u in users.get(v, ()))]
            if len(order) + len(chain) <= self.runtime.max_ops and self._launch(
                [x], order, reduce=(n, red), post=(chain, stores or [n])
            ):
                if n not in stores:
                    n.done(None)  # never written: every reader is in the epilogue
                return True
            chain.pop()
        return self._launch([x], order, reduce=(n, red))

    def _post_chain(self, n: Node, users: dict[Node, list[Node]], stream: list[Node]) -> list[Node]:
        """The element-wise nodes after reduce call ``n`` that a reduce kernel can run on each result:
        of the result's shape, dtype and compute dtype (float), reading ``n``, each other, scalars
        and computed values only (in stream order)."""
        if not users.get(n):
            return []
        chain: list[Node] = []
        inside = {n}
        for u in stream[n.pos + 1 :]:
            if (
                u.op is None
                or u.op[0] == "call"
                or u.shape != n.shape
                or u.dtype is not n.dtype
                or u.compute is not n.dtype
            ):
                continue
            args = [a for a in u.args if type(a) is Node]
            if any(a in inside for a in args) and all(
                a in inside or (a.op is None and a.dtype is n.dtype and type(a.value) is not _Failed)
                for a in args
            ):
                chain.append(u)
                inside.add(u)
        return chain

    def _fused_matmul(self, m: Node, users: dict[Node, list[Node]], stream: list[Node]) -> bool:
        """Run matmul call ``m`` (its operands computed) with the element-wise chain that consumes its
        product applied before the store (the matmul epilogue: a bias, an activation, an optimizer's
        update of a weight gradient), where the runtime has the kernel; False (nothing run)
        otherwise. The chain is the product's readers of its shape whose other operands are computed
        or element-wise over computed values (and their readers of the same kind); the product is
        written too only where a tensor holds it or something outside the chain reads it. Too many
        bindings or ops: a shorter prefix of the chain. A matmul called under ambient settings other
        than the ones in force now (``call_state``) runs as recorded, so ``fuse_matmul`` judges under
        the settings of the call (a replay has the same ones: they are part of the signature)."""
        fuse = self._fuse_matmul
        readers = users.get(m)
        if fuse is None or not readers or m.twin is not None or not self._called_now(m):
            return False
        chain: list[Node] = []
        inside = {m}
        ready: dict[Node, bool] = {}
        for u in stream[m.pos + 1 :]:
            if u.op is None or u.op[0] == "call" or u.shape != m.shape:
                continue
            args = [a for a in u.args if type(a) is Node]
            if any(a in inside for a in args) and all(a in inside or _ready(a, ready) for a in args):
                chain.append(u)
                inside.add(u)
        if not chain:
            return False
        lhs, rhs = m.args
        if not fuse(lhs.value, rhs.value):  # type: ignore[union-attr]  # computed operands
            return False
        limit = self.runtime.max_ops
        while chain:
            part = set(chain)
            outs = [u for u in chain if wanted(u) or any(v not in part for v in users.get(u, ()))]
            if outs:
                product = wanted(m) or any(v not in part for v in readers)
                if product:  # written by the kernel too
                    outs.insert(0, m)
                order = [o for o in _closure(outs) if o is not m]
                if len(order) <= limit and self._launch(outs, order, matmul=m):
                    if not product:
                        m.done(None)  # never written: every reader is computed
                    return True
            chain.pop()
        return False

    # ------------------------------------------------------------------ one kernel
    def _kernel_plan(
        self,
        outs: list[Node],
        order: list[Node],
        reduce: tuple[Node, FusedReduce] | None,
        matmul: Node | None,
        post: tuple[list[Node], list[Node]] | None,
    ) -> tuple[FusedKernel, list[Node], list[Scalar]] | None:
        """The plan of one kernel writing ``outs`` (arguments as ``Launching._launch`` takes them,
        ``order`` the closure of ``outs``), the nodes it reads in binding order (a matmul epilogue's
        product first) and its scalars; None when it would need too many bindings."""
        # one walk builds the plan's signature: inputs as -1-k, ops by position, scalars as None in
        # order (each kind has a fixed arity); equal signatures share one FusedKernel and so the
        # runtime's compiled kernel: a repeated step plans nothing beyond this walk
        inputs: dict[Node, int] = {}
        scalars: list[Scalar] = []
        scalar_dtypes: list[DType] = []
        number: dict[Node, int] = {}
        sig: list[Any] = [outs[0].shape]
        if matmul is not None:
            inputs[matmul] = 0
            sig.append("matmul")
        elif reduce is not None:
            sig.append(reduce[1])
            if outs[0].op is None:  # a reduce kernel of no ops: it reduces its input
                inputs[outs[0]] = 0
        for j, n in enumerate(order):
            number[n] = j
            sig += n.op  # type: ignore[arg-type]  # lazy
            sig.append(n.compute)
            sig.append(n.dtype)
            for a in n.args:
                if type(a) is Node:
                    if a.op is None or a is matmul:
                        k = inputs.get(a)
                        if k is None:
                            k = inputs[a] = len(inputs)
                        sig.append(-1 - k)
                    else:
                        sig.append(number[a])
                else:
                    scalars.append(a)  # type: ignore[arg-type]  # not a Node: a scalar
                    scalar_dtypes.append(n.compute)
                    sig.append(None)
        stored = len(outs)
        if post is not None:  # the epilogue: the reduced value "R", its ops by position, scalars
            chain, stores = post
            sig.append("post")
            place = {n: j for j, n in enumerate(chain)}
            for u in chain:
                sig += u.op  # type: ignore[arg-type]  # lazy
                for a in u.args:
                    if type(a) is Node:
                        if a in place:
                            sig.append(("p", place[a]))
                        elif a.op is not None:
                            sig.append("R")  # the reduce call
                        else:
                            k = inputs.get(a)
                            if k is None:
                                k = inputs[a] = len(inputs)
                            sig.append(-1 - k)
                    else:
                        scalars.append(a)  # type: ignore[arg-type]  # not a Node: a scalar
                        scalar_dtypes.append(u.compute)
                        sig.append(None)
            sig += ["R" if v not in place else place[v] for v in stores]
            stored = len(stores)
        if len(inputs) + stored + (matmul is not None) > self.runtime.max_tensors:
            return None
        sig += [i.dtype for i in inputs]
        sig += [number[o] if o in number else -1 - inputs[o] for o in outs]
        key = tuple(sig)
        plan = self._plans.get(key)
        if plan is None:
            red = None if reduce is None else reduce[1]
            if post is not None and red is not None:
                red = _post_reduce(red, order, inputs, len(scalar_dtypes), post)
            plan = self._plans[key] = _make_plan(order, inputs, scalar_dtypes, outs, red, matmul is not None)
        return plan, list(inputs), scalars


def _make_plan(
    order: list[Node],
    inputs: dict[Node, int],
    scalar_dtypes: list[DType],
    outs: list[Node],
    reduce: FusedReduce | None = None,
    matmul: bool = False,
) -> FusedKernel:
    """The FusedKernel of one launch: values numbered inputs, scalars, then ops (``_plan``)."""
    first = len(inputs) + len(scalar_dtypes)
    number = {n: first + j for j, n in enumerate(order)}
    ops = _fused_ops(order, lambda a: inputs[a] if a in inputs else number[a], len(inputs))
    return FusedKernel(
        outs[0].shape,
        tuple(i.dtype for i in inputs),
        tuple(scalar_dtypes),
        tuple(ops),
        tuple(number[o] if o in number else inputs[o] for o in outs),
        reduce,
        matmul,
    )


def _fused_ops(nodes: list[Node], value: Callable[[Node], int], scalar: int) -> list[FusedOp]:
    """The ``FusedOp`` of each lazy element-wise node: node operands numbered by ``value``, scalar
    operands numbered in order from ``scalar``."""
    ops = []
    for n in nodes:
        args = []
        for a in n.args:
            if type(a) is Node:
                args.append(value(a))
            else:
                args.append(scalar)
                scalar += 1
        kind, name = n.op  # type: ignore[misc]  # lazy
        ops.append(FusedOp(kind, name, n.compute, n.dtype, tuple(args)))
    return ops


def _post_reduce(
    red: FusedReduce,
    order: list[Node],
    inputs: dict[Node, int],
    n_scalars: int,
    post: tuple[list[Node], list[Node]],
) -> FusedReduce:
    """``red`` with its epilogue (``FusedReduce.post``): value numbers as ``_make_plan`` gives the
    plan (inputs, scalars, the ops of ``order``), then the reduced value, then the chain's ops; the
    chain's scalars are the last of the plan's."""
    chain, stores = post
    reduced = len(inputs) + n_scalars + len(order)
    number = {n: reduced + 1 + j for j, n in enumerate(chain)}
    first_scalar = len(inputs) + n_scalars - sum(1 for u in chain for a in u.args if type(a) is not Node)
    ops = _fused_ops(
        chain, lambda a: number[a] if a in number else inputs[a] if a.op is None else reduced, first_scalar
    )
    written = tuple(number.get(v, reduced) for v in stores)
    return FusedReduce(red.op, red.dims, red.keepdim, tuple(ops), written)


def _users(stream: list[Node]) -> dict[Node, list[Node]]:
    """The readers of each lazy node of ``stream`` (element-wise nodes and calls), in stream order."""
    users: dict[Node, list[Node]] = {}
    for u in stream:
        if u.op is None:
            continue
        for a in u.args if u.op[0] != "call" else _flat(u.args, Node):
            if type(a) is Node and a.op is not None:
                users.setdefault(a, []).append(u)
    return users


def _ready(a: Node, memo: dict[Node, bool]) -> bool:
    """Whether ``a`` is computed, or element-wise over computed values only (so a kernel can compute
    it from its inputs)."""
    if a.op is None:
        return True
    ok = memo.get(a)
    if ok is None:
        ok = a.op[0] != "call" and all(_ready(b, memo) for b in a.args if type(b) is Node)
        memo[a] = ok
    return ok


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
