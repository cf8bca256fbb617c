"""``KernelWriter``: an optimizer's update written as one element-wise kernel plan (``FusedKernel``),
which ``burn.fusion.launch`` runs as one kernel on fusion devices and op by op elsewhere."""

from __future__ import annotations

from .._dtype import DType
from ..fusion import FusedKernel, FusedOp


class KernelWriter:
    """Numbers a plan's values the way ``FusedKernel`` does: the ``inputs`` tensors first (0, 1, ...),
    then the ``scalars`` (``scalar_numbers``), then one value per ``op`` in the order written. Every op
    computes in ``dtype``.

    >>> k = KernelWriter(burn.float32, inputs=1, scalars=1)
    >>> doubled = k.op("binary", "mul", 0, k.scalar_numbers[0])
    >>> k.plan((3,), (doubled,)).outputs
    (2,)
    """

    def __init__(self, dtype: DType, inputs: int, scalars: int) -> None:
        self.dtype = dtype
        self.inputs = inputs
        self.scalar_numbers = tuple(range(inputs, inputs + scalars))
        self.ops: list[FusedOp] = []

    def op(self, kind: str, name: str, *args: int) -> int:
        """Append an op (``kind``: unary or binary) over value numbers; its result's value number."""
        self.ops.append(FusedOp(kind, name, self.dtype, self.dtype, args))
        return self.inputs + len(self.scalar_numbers) + len(self.ops) - 1

    def plan(self, shape: tuple[int, ...], outputs: tuple[int, ...]) -> FusedKernel:
        """The plan over ``shape`` writing the values ``outputs``."""
        dt = self.dtype
        return FusedKernel(
            shape, (dt,) * self.inputs, (dt,) * len(self.scalar_numbers), tuple(self.ops), outputs
        )
