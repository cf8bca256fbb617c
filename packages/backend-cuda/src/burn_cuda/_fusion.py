"""Fused element-wise kernels: burn.fusion's plans rendered as one ``cupy.ElementwiseKernel`` each.

The kernel takes the plan's inputs (CuPy broadcasts and strides them) and scalars and writes its
outputs. Every op is the expression of the element-wise table (``_kernels``) in its own block with
``C`` the op's compute type, so a fused chain computes what the unfused kernels compute (half values
are carried in float registers between ops and rounded only when stored).
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any

from burn import DType
from burn.fusion import FusedKernel

from . import _kernels
from ._dtypes import C_TYPE, COMPUTE_TYPE, TO_NP
from ._types import Kernel, Prim

if TYPE_CHECKING:
    from ._backend import CudaBackend

_TABLES = {"unary": _kernels.UNARY_EXPR, "binary": _kernels.BINARY_EXPR}
_lock = threading.Lock()


class CudaFusion:
    """The ``FusionRuntime`` of burn-cuda (CuPy compiles each kernel once and caches it on disk)."""

    max_tensors = 32
    max_ops = 64

    def __init__(self, backend: CudaBackend) -> None:
        self.backend = backend
        self._kernels: dict[tuple[Any, ...], Kernel] = {}

    def fusable(self, kind: str, name: str, compute: DType, out: DType) -> bool:
        if compute not in TO_NP or out not in TO_NP:
            return False
        if kind in ("cast", "where"):
            return True
        dt = TO_NP[compute]
        if kind == "clamp":
            return dt.kind in "fiu"
        try:
            _kernels.expression(_TABLES[kind], name, dt)
        except KeyError:
            return False
        return True

    def execute(self, plan: FusedKernel, inputs: list[Prim], scalars: list[Any]) -> list[Prim]:
        b = self.backend
        cp = b._on()
        kernel = plan.cache.get("cuda") or self._kernels.get(plan.key)
        if kernel is None:
            with _lock:
                kernel = self._kernels.get(plan.key)
                if kernel is None:
                    in_params, out_params, body = source(plan)
                    name = f"burn_fused_{len(self._kernels)}"
                    kernel = cp.ElementwiseKernel(
                        in_params, out_params, body, name, preamble=_kernels.PREAMBLE
                    )
                    self._kernels[plan.key] = kernel
        plan.cache["cuda"] = kernel
        outs = [cp.empty(plan.shape, dtype=TO_NP[dt]) for dt in plan.out_dtypes()]
        args = [*inputs, *(TO_NP[dt].type(v) for dt, v in zip(plan.scalars, scalars)), *outs]
        kernel(*args)
        return outs


def source(plan: FusedKernel) -> tuple[str, str, str]:
    """(in_params, out_params, body) of the ElementwiseKernel running ``plan``."""
    np_in = [TO_NP[d] for d in plan.inputs]
    np_sc = [TO_NP[d] for d in plan.scalars]
    in_params = [f"{d.name} l{k}" for k, d in enumerate(np_in)] + [
        f"{d.name} s{k}" for k, d in enumerate(np_sc)
    ]
    out_np = [TO_NP[d] for d in plan.out_dtypes()]
    out_params = ", ".join(f"{d.name} o{k}" for k, d in enumerate(out_np))
    first = plan.first_op
    ctype: list[str] = [COMPUTE_TYPE[d] for d in np_in] + [COMPUTE_TYPE[d] for d in np_sc]
    lines = [f"const {ctype[k]} v{k} = ({ctype[k]})l{k};" for k in range(len(np_in))]
    lines += [f"const {ctype[len(np_in) + k]} v{len(np_in) + k} = s{k};" for k in range(len(np_sc))]
    for j, op in enumerate(plan.ops):
        v = first + j
        out_c = COMPUTE_TYPE[TO_NP[op.out]]
        comp = TO_NP[op.compute]
        c = COMPUTE_TYPE[comp]
        names = [f"v{a}" for a in op.args]
        if op.kind == "where":
            expr = f"{names[0]} ? (C){names[1]} : (C){names[2]}"
            operands = ""
        else:
            if op.kind == "cast":
                expr = "a"
            elif op.kind == "clamp":
                expr = "a < b ? b : (a > c ? c : a)"
            else:
                expr = _kernels.expression(_TABLES[op.kind], op.name, comp)
            operands = " ".join(f"const C {'abc'[i]} = (C){n};" for i, n in enumerate(names))
        if out_c != C_TYPE[TO_NP[op.out]]:  # half: rounded as the unfused op stores it, carried in float
            expr = f"({C_TYPE[TO_NP[op.out]]})({expr})"
        lines.append(f"{out_c} v{v}; {{ typedef {c} C; {operands} v{v} = ({out_c})({expr}); }}")
        ctype.append(out_c)
    for k, (value, d) in enumerate(zip(plan.outputs, out_np)):
        lines.append(f"o{k} = ({C_TYPE[d]})v{value};")
    return ", ".join(in_params), out_params, "\n".join(lines)
