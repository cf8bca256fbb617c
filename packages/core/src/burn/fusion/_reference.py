"""The reference runtime: runs a fused plan op by op on the inner backend.

Backends without a kernel renderer (numpy, third-party ones) get fusion's lazy planning with it, and
tests use it as the oracle a renderer's kernels are compared with.
"""

from __future__ import annotations

from typing import Any

from .._dtype import DType
from .._dtype import dtype as as_dtype
from ..backend import Backend
from ._plan import FusedKernel

FUSED_REDUCE_OPS = frozenset({"sum", "mean", "max", "min"})  # the reductions a reduce kernel may run


class ReferenceRuntime:
    """``FusionRuntime`` over any backend: each op of a plan is one call of the backend's own method.

    >>> f32 = burn.float32
    >>> plan = burn.fusion.FusedKernel((2,), (f32,), (f32,), (burn.fusion.FusedOp("binary", "add", f32, f32, (0, 1)),), (2,))
    >>> cpu = burn.device("cpu").backend
    >>> out = ReferenceRuntime(cpu).execute(plan, [burn.tensor([1.0, 2.0]).primitive], [10.0])
    >>> cpu.to_numpy(out[0]).tolist()
    [11.0, 12.0]
    """

    max_tensors = 64
    max_ops = 64
    reduce_epilogues = True  # reduce kernels run ``FusedReduce.post``

    def __init__(self, backend: Backend) -> None:
        self.backend = backend
        self._unary = _unary_names(backend)

    def fusable(self, kind: str, name: str, compute: DType, out: DType) -> bool:
        return True

    def fuse_reduce(self, op: str, dtype: DType, shape: tuple[int, ...], dims: tuple[int, ...]) -> bool:
        """Reduce kernels of sum, mean, max and min (run as the chain, then the backend's reduce)."""
        return op in FUSED_REDUCE_OPS

    def fuse_matmul(self, lhs: Any, rhs: Any) -> bool:
        """Matmul epilogues (run as the backend's matmul, then the chain)."""
        return True

    def execute(self, plan: FusedKernel, inputs: list[Any], scalars: list[Any]) -> list[Any]:
        b = self.backend
        if plan.matmul:  # value 0 is the product of the first two tensors
            inputs = [b.matmul(inputs[0], inputs[1]), *inputs[2:]]
        values: list[Any] = [*inputs, *scalars]
        self._run_ops(plan.ops, values)
        red = plan.reduce
        if red is not None:
            reduced = b.reduce(red.op, values[plan.outputs[0]], red.dims, red.keepdim)
            return red.finish(plan, reduced, inputs, scalars, self.execute)
        return [values[v] for v in plan.outputs]

    def _run_ops(self, ops: tuple[Any, ...], values: list[Any]) -> None:
        """Append each op's result to ``values`` (read by value number)."""
        b = self.backend
        for op in ops:
            args = [values[i] for i in op.args]
            if op.kind == "unary":
                r = b.unary(op.name, args[0]) if op.name in self._unary else b.activation(op.name, args[0])
            elif op.kind == "binary":
                r = b.binary(op.name, args[0], args[1])
            elif op.kind == "where":
                r = b.where(args[0], args[1], args[2])
            elif op.kind == "clamp":
                r = b.clamp(args[0], args[1], args[2])
            else:
                r = b.cast(args[0], as_dtype(op.name))
            values.append(r)


def _unary_names(b: Backend) -> frozenset[str]:
    """Ops ``unary`` takes on ``b``: every non-activation op, and the activations it lists as native."""
    from ..backend import ACTIVATION_OPS, UNARY_OPS

    return frozenset(UNARY_OPS) - (ACTIVATION_OPS - b.native_activations)
