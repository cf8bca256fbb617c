"""Conformance rows of ``burn.custom`` ops: an op with a numpy function and a composition (a backend
without a kernel of its own runs the composition), called like any op and compared with the numpy
backend, which runs the numpy function."""

from __future__ import annotations

from typing import Any

import numpy as np

import burn

from .._specs import F32, F64, OpSpec, gen


def _axpby() -> burn.custom.CustomOp:
    """``a * x + b * y`` with float attributes: registered once per process under a reserved name."""
    name = "burn_testing_axpby"
    try:
        return burn.custom.get(name)
    except burn.custom.CustomOpError:
        return burn.custom.op(
            name,
            kernels={"cpu": lambda x, y, a, b: (a * x + b * y).astype(np.result_type(x, y))},
            compose=lambda x, y, a, b: x * a + y * b,
        )


def rows() -> list[OpSpec]:
    def call(c: Any, x: Any, y: Any) -> Any:
        return _axpby()(x, y, a=1.5, b=-0.5)

    return [OpSpec("custom_axpby", call, gen((4, 3), (4, 3)), (F32, F64))]
