"""Every op of the vocabulary (``burn.ir.OPS``) has its row in every table that must hold one: the
numpy, CUDA and WGSL expression tables (element-wise kinds), the autodiff rules (differentiable kinds)
and the conformance table (every kind a graph can hold). A missing row is a silent hole: a backend that
raises KeyError on an op it claims, or an op no test ever runs."""

from __future__ import annotations

import zlib

import burn
import numpy as np
from burn import ir
from burn.backend import ACTIVATION_OPS, BINARY_OPS, UNARY_OPS

ELEMENTWISE_METHODS = ("unary", "binary", "activation")


def _kinds(*methods: str) -> set[str]:
    return {str(k) for k, d in ir.OPS.items() if d.method in methods}


def test_vocabulary_is_the_op_tables():
    assert _kinds("unary", "activation") == set(UNARY_OPS)
    assert _kinds("binary") == set(BINARY_OPS)
    assert _kinds("activation") == set(ACTIVATION_OPS)


def test_numpy_tables_cover_every_elementwise_kind():
    from burn._ndarray import _ops

    assert _kinds("unary", "activation") - set(_ops.UNARY) == set()
    assert _kinds("binary") - set(_ops.BINARY) == set()


def test_cuda_expression_tables_cover_every_elementwise_kind():
    from burn_cuda import _kernels  # numpy only: no GPU needed to read the tables

    assert _kinds("unary", "activation") - set(_kernels.UNARY_EXPR) == set()
    assert _kinds("binary") - set(_kernels.BINARY_EXPR) == set()


def test_wgsl_expression_tables_cover_every_elementwise_kind():
    from burn_wgpu._kernels import elementwise

    assert _kinds("unary", "activation") - set(elementwise.UNARY) == set()
    assert _kinds("binary") - set(elementwise.BINARY) == set()


def test_autodiff_has_a_rule_for_every_differentiable_kind():
    from burn_autodiff import _rules

    named = {"unary", "binary", "reduce", "arg_reduce", "activation"}
    missing = []
    for kind, d in ir.OPS.items():
        if not d.differentiable:
            continue
        method = "unary" if d.method == "activation" else d.method
        key = f"{method}:{kind}" if d.method in named else str(kind)
        if key not in _rules.RULES:
            missing.append(key)
    # unfold4d has no rule of its own: a tracked input goes through conv with a one-hot kernel;
    # conv_weight_grad with a tracked operand (a double backward) runs its default composition
    assert sorted(missing) == ["conv_weight_grad", "unfold4d"]


def test_conformance_table_exercises_every_kind():
    """Capture every row of the conformance table and collect the op kinds its graphs hold."""
    from burn.testing import SPECS
    from burn.testing._specs import Ctx

    cpu = burn.device("cpu")
    seen: set[str] = set()
    for spec in SPECS:
        for dtype in spec.dtypes:
            rng = np.random.default_rng(zlib.crc32(f"{spec.name}/{dtype}".encode()))
            tensors = [burn.from_numpy(a, device=cpu) for a in spec.inputs(rng, dtype)]
            shapes = {f"x{i}": (t.shape, t.dtype) for i, t in enumerate(tensors)}
            graph = ir.capture(
                lambda *xs, spec=spec, dtype=dtype: spec.call(
                    Ctx(ir.capture_device(), burn.dtype(dtype)), *xs
                ),
                shapes,
                like=cpu,
            )
            seen |= {str(op.kind) for op in graph.ops}
    # host data becomes a graph's constants, never an op
    assert {str(k) for k in ir.OPS} - seen == {"from_numpy"}
