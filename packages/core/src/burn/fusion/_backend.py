"""``Fusion(inner)``: a backend decorator that records the op stream lazily, runs chains of element-wise
ops as one generated kernel and replays a repeated stream without planning it again (Burn's
burn-fusion).

Every op builds a lazy ``Node`` and launches nothing (``_stream.py``): element-wise ops (unary,
activations, binary with broadcasting and scalars, where, clamp, casts) as expressions, every other op
(matmul, reductions, conv, indexing, shape ops, ...: ``_ops.py``) as a *call* the inner backend runs
whole, with its result's shape and dtype known at once from ``burn.ir``'s shape rules. A read, a sync or
a long stream *flushes* the stream (``_program.py``): the first time a stream is seen it is planned
(``_planner.py``) and its kernels run (``_launch.py``), and what ran is kept as a *program*; a stream
whose signature equals one already planned replays that program.

Creation and random ops run at once (random draws keep their order with other host draws), and so do
ops whose result depends on the data (``nms``, ``check_index``); their results enter streams as inputs.
Contract defaults made mostly of element-wise ops (softmax, leaky_relu, var, ...) run composed here
where the inner backend has no kernel of its own, so their element-wise parts fuse.

Like the GPU backends it wraps, a fusion backend takes its ops from one thread at a time.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any

from .._dtype import DType
from ..backend import ACTIVATION_OPS, BINARY_OPS, Backend, MemoryStats, broadcast_shape
from ._graph import FPrim
from ._ops import InnerOps
from ._plan import FusionRuntime
from ._program import Replaying
from ._stream import Scalar, elementwise_dtype

if TYPE_CHECKING:
    import numpy as np

    from .._device import Device


class Fusion(InnerOps, Replaying):
    """The fusion decorator over ``inner``; ``burn.device(name, fusion=True)`` builds one (on by
    default on GPU backends; ``fusion=False`` or ``BURN_FUSION=0`` turns it off).

    ``runtime``: the kernel generator (default: ``inner.fusion_runtime()``, else the reference
    runtime, which runs plans op by op). ``graphs``: capture repeated programs as device graphs where
    the runtime can (default: unless ``BURN_FUSION_GRAPHS=0``); False always replays step by step, each
    kernel through the inner backend (a web export records those launches). ``stats`` counts ``kernels`` launched from plans, ``fused``
    (those of two ops or more), ``ops`` (element-wise ops deferred), ``calls`` (other ops deferred),
    ``flushes``, ``replays`` (flushes that ran a program planned before), ``plans`` (flushes that
    planned) and ``replans`` (times the kept programs were dropped because background autotuning switched
    a kernel: ``burn.autotune.generation``).

    The stages are classes of their own, each the base of the next: ``Recording`` (``_stream.py``),
    ``Planning`` (``_planner.py``), ``Launching`` (``_launch.py``), ``Replaying`` (``_program.py``);
    ``InnerOps`` (``_ops.py``) holds the ops the inner backend runs, and this class the element-wise ops
    and the values in and out.

    >>> dev = burn.device("cpu", fusion=True)
    >>> ((burn.ones(3, device=dev) * 2).exp() + 1).shape
    (3,)
    """

    is_autodiff = False
    native_activations = ACTIVATION_OPS  # every activation reaches unary(), which fuses or forwards it

    def __init__(
        self,
        inner: Backend,
        device: Device | None = None,
        runtime: FusionRuntime | None = None,
        *,
        graphs: bool | None = None,
    ) -> None:
        if getattr(inner, "is_autodiff", False):
            raise TypeError(
                f"Fusion: the inner backend {inner!r} is an autodiff backend; autodiff wraps fusion"
            )
        super().__init__(inner, runtime, graphs)
        if device is not None:
            self.device = device
        self._bind_calls()
        self.binary_fns = {op: functools.partial(self.binary, op) for op in BINARY_OPS}

    def __repr__(self) -> str:
        return f"<Fusion({type(self.inner).__name__}) {self.device}>"

    # ------------------------------------------------------------------ values in and out
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

    def call_state(self) -> Any:
        return self.inner.call_state()

    def call_state_scope(self, state: Any) -> AbstractContextManager[Any]:
        return self.inner.call_state_scope(state)

    def sync(self) -> None:
        self.flush()
        self.inner.sync()

    def memory_stats(self) -> MemoryStats | None:
        return self.inner.memory_stats()

    def reset_peak_memory(self) -> None:
        self.inner.reset_peak_memory()

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

    # ------------------------------------------------------------------ element-wise (deferred)
    def unary(self, op: str, x: FPrim) -> FPrim:
        n = x.node
        dt = n.dtype
        out = elementwise_dtype(op, dt)
        if self._can("unary", op, dt, out):
            return self._defer("unary", op, (n,), n.shape, out, dt)
        inner = self.inner
        if op in ACTIVATION_OPS and op not in inner.native_activations:
            from ..backend._activation_defaults import ACTIVATION_DEFAULTS

            return ACTIVATION_DEFAULTS[op](self, x)  # its pieces may fuse
        return self._wrap(inner.unary(op, self._values([x])[0]))

    def binary(self, op: str, a: FPrim | Scalar, b: FPrim | Scalar) -> FPrim:
        if type(a) is FPrim:
            dt = a.node.dtype
            shape = a.node.shape
            if type(b) is FPrim and b.node.shape != shape:
                shape = broadcast_shape(shape, b.node.shape)  # the home remembers each pair
        else:
            assert type(b) is FPrim, "binary: one operand is a tensor (the frontend's contract)"
            dt, shape = b.node.dtype, b.node.shape
        out = elementwise_dtype(op, dt)
        if self._can("binary", op, dt, out):
            operands = (a.node if type(a) is FPrim else a, b.node if type(b) is FPrim else b)
            return self._defer("binary", op, operands, shape, out, dt)
        return self._wrap(self.inner.binary(op, *_eager(self, (a, b))))

    def where(self, cond: FPrim, a: FPrim | Scalar, b: FPrim | Scalar) -> FPrim:
        tensors = [t for t in (a, b) if type(t) is FPrim]
        if tensors:
            dt = tensors[0].node.dtype
            shape = broadcast_shape(cond.node.shape, *(t.node.shape for t in tensors))
            if self._can("where", "where", dt, dt):
                operands = (cond.node, a.node if type(a) is FPrim else a, b.node if type(b) is FPrim else b)
                return self._defer("where", "where", operands, shape, dt, dt)
        return self._wrap(self.inner.where(*_eager(self, (cond, a, b))))

    def clamp(self, x: FPrim, lo: float | int | None, hi: float | int | None) -> FPrim:
        dt = x.node.dtype
        if lo is None or hi is None or not self._can("clamp", "clamp", dt, dt):
            return super().clamp(x, lo, hi)  # maximum/minimum: deferred where they can be
        return self._defer("clamp", "clamp", (x.node, lo, hi), x.node.shape, dt, dt)

    def cast(self, x: FPrim, dtype: DType) -> FPrim:
        src = x.node.dtype
        if dtype is src:
            return x
        if self._can("cast", dtype.name, src, dtype):
            return self._defer("cast", dtype.name, (x.node,), x.node.shape, dtype, src)
        return self._wrap(self.inner.cast(self._values([x])[0], dtype))


def _eager(b: Fusion, args: tuple[Any, ...]) -> list[Any]:
    """``args`` with their tensors computed, for an op the runtime cannot render."""
    prims = [a for a in args if type(a) is FPrim]
    values = iter(b._values(prims))
    return [next(values) if type(a) is FPrim else a for a in args]


def fusion_of(target: Any) -> Fusion | None:
    """The fusion decorator under ``target`` (a device, a device's name, or a backend: decorators such as
    autodiff are looked through), or None where the device runs without fusion. Its ``stats`` and
    ``seconds`` (planning and graph-capture seconds) are what benchmarks and the Learner report.

    >>> burn.fusion.fusion_of(burn.device("cpu", autodiff=True, fusion=True)) is not None
    True
    >>> burn.fusion.fusion_of("cpu") is None
    True
    """
    from .._device import Device
    from .._device import device as as_device

    b: Any = as_device(target).backend if isinstance(target, (Device, str)) else target
    while b is not None and not isinstance(b, Fusion):
        b = getattr(b, "inner", None)
    return b


def backward_begins(backend: Any) -> None:
    """Tell the fusion decorator under ``backend`` (an autodiff decorator's inner backend) that a
    backward pass begins: a loop that marks no steps and reads nothing is cut here, so its steps
    replay (``Fusion.backward_begins``). Nothing happens without fusion. burn-autodiff calls it.

    >>> dev = burn.device("cpu", fusion=True)
    >>> burn.fusion.backward_begins(dev.backend)
    """
    fusion = fusion_of(backend)
    if fusion is not None:
        fusion.backward_begins()


def mark_step(device: Any) -> None:
    """End a step of a loop on ``device`` (a device or its name): the op stream fusion recorded so far
    is launched now, without waiting for the device, so every step is one stream, planned once and then
    replayed; then kernel tuning queued in the background runs for its budget
    (``burn.autotune.tune_pending``). The optimizers call it after each update, so training loops need
    nothing; an inference loop that reads nothing may call it after each batch. A device without fusion
    only runs the queued tuning.

    >>> dev = burn.device("cpu", fusion=True)
    >>> y = burn.ones(3, device=dev) * 2
    >>> burn.fusion.mark_step(dev)  # launched; reading y now waits for nothing more
    """
    from ..autotune import tune_pending

    end_stream(device)
    tune_pending()


def end_stream(device: Any) -> None:
    """``mark_step`` without the tuning: launch what fusion recorded on ``device`` (an optimizer ends the
    streams of all its devices, then runs the queued tuning once)."""
    from .._device import device as as_device

    b: Any = as_device(device).backend
    while b is not None:
        if isinstance(b, Fusion):
            b.flush()
            return
        mark = getattr(b, "mark_step", None)
        if mark is not None:  # a backend that passes the mark on (burn-remote: to the server's device)
            mark()
            return
        b = getattr(b, "inner", None)
