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

    def __init__(self, backend: Backend) -> None:
        self.backend = backend
        self._unary = _unary_names(backend)

    def fusable(self, kind: str, name: str, compute: DType, out: DType) -> bool:
        return True

    def execute(self, plan: FusedKernel, inputs: list[Any], scalars: list[Any]) -> list[Any]:
        b = self.backend
        values: list[Any] = [*inputs, *scalars]
        for op in plan.ops:
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
        return [values[v] for v in plan.outputs]


def _unary_names(b: Backend) -> frozenset[str]:
    """Ops ``unary`` takes on ``b``: every non-activation op, and the activations it lists as native."""
    from ..backend import ACTIVATION_OPS, UNARY_OPS

    return frozenset(UNARY_OPS) - (ACTIVATION_OPS - b.native_activations)
