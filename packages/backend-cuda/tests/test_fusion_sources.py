"""The CUDA C burn-cuda renders for fusion plans (``_renderer``): element-wise kernels (CuPy's
ElementwiseKernel and the dense RawKernel) with broadcasting, scalars, casts, where/clamp, bools,
float16 and bfloat16; reduce kernels of each op with a chain before and an epilogue after; the tiled
GEMM's matmul epilogues. Every source is well-formed: brackets balance, every value is declared once
before it is read, every tensor and scalar it names is a parameter. These checks run everywhere (no
GPU needed); on a GPU, NVRTC compiles each source (those tests skip cleanly without CuPy or a GPU).
"""

from __future__ import annotations

import re

import burn
import numpy as np
import pytest
from burn.fusion import FusedKernel, FusedOp, FusedReduce

ml_dtypes = pytest.importorskip("ml_dtypes")

f16, f32, f64, i32, i64, u8, b = (
    burn.float16,
    burn.float32,
    burn.float64,
    burn.int32,
    burn.int64,
    burn.uint8,
    burn.bool_,
)
bf16 = burn.bfloat16


def op(kind, name, args, compute=f32, out=None):
    return FusedOp(kind, name, compute, out or compute, args)


def _elementwise():
    """(id, plan) of element-wise plans."""
    return {
        "broadcast_scalar": FusedKernel(
            (3, 4), (f32, f32), (f32,), (op("binary", "mul", (0, 2)), op("binary", "sub", (1, 3))), (4,)
        ),
        "two_outputs_and_unary": FusedKernel(
            (8,), (f32,), (), (op("unary", "gelu", (0,)), op("unary", "exp", (1,))), (1, 2)
        ),
        "where_clamp_cast_bool": FusedKernel(
            (2, 5),
            (f32, i32),
            (f32, f32, f32),
            (
                op("binary", "gt", (0, 2), out=b),  # v5: bool
                op("clamp", "clamp", (0, 3, 4)),  # v6
                op("cast", "float32", (1,), compute=i32, out=f32),  # v7
                op("where", "where", (5, 6, 7)),  # v8
                op("unary", "not", (5,), compute=b),  # v9
            ),
            (8, 9),
        ),
        "integers": FusedKernel(
            (6,),
            (i64, u8),
            (i64,),
            (
                op("binary", "floor_div", (0, 2), compute=i64),
                op("cast", "int64", (1,), compute=u8, out=i64),
                op("binary", "remainder", (3, 4), compute=i64),
            ),
            (5,),
        ),
        "float16": FusedKernel(
            (4, 4),
            (f16, f16),
            (f16,),
            (op("binary", "add", (0, 1), compute=f16), op("binary", "mul", (3, 2), compute=f16)),
            (4,),
        ),
        "bfloat16": FusedKernel(
            (8,),
            (bf16, bf16),
            (bf16,),
            (
                op("binary", "mul", (0, 2), compute=bf16),
                op("unary", "relu", (3,), compute=bf16),
                op("cast", "float32", (4,), compute=bf16, out=f32),
            ),
            (4, 5),
        ),
    }


def _reduces():
    """(id, plan) of reduce plans: each op, with a chain before and (some) an epilogue after."""
    plans = {}
    for red in ("sum", "mean", "max", "min"):
        for dt in (f32, f64):
            chain = (op("binary", "sub", (0, 1), compute=dt), op("unary", "exp", (2,), compute=dt))
            plans[f"{red}_{dt.name}"] = FusedKernel(
                (4, 6), (dt, dt), (), chain, (3,), reduce=FusedReduce(red, (1,), True)
            )  # v4 = red(exp(x - m)), then v5 = log(v4), v6 = v5 + m; stored: v4 and v6
            post = (op("unary", "log", (4,), compute=dt), op("binary", "add", (5, 1), compute=dt))
            plans[f"{red}_{dt.name}_epilogue"] = FusedKernel(
                (4, 6), (dt, dt), (), chain, (3,), reduce=FusedReduce(red, (1,), True, post, (4, 6))
            )
    # an epilogue reading a scalar and an input the chain does not (bfloat16 and int32 through casts)
    post = (
        op("cast", "float32", (1,), compute=bf16, out=f32),  # v5
        op("cast", "float32", (2,), compute=i32, out=f32),  # v6
        op("binary", "add", (4, 5)),  # v7
        op("binary", "mul", (7, 6)),  # v8
        op("binary", "mul", (8, 3)),  # v9
    )
    plans["epilogue_reads_only_its_inputs"] = FusedKernel(
        (3, 5), (f32, bf16, i32), (f32,), (), (0,), reduce=FusedReduce("sum", (0, 1), False, post, (9,))
    )
    return plans


def _epilogues():
    return {
        "bias_relu": FusedKernel(
            (4, 5),
            (f32, f32),
            (),
            (op("binary", "add", (0, 1)), op("unary", "relu", (2,))),
            (3,),
            matmul=True,
        ),
        "product_kept_scalar_mask": FusedKernel(
            (4, 5),
            (f32, f32),
            (f32,),
            (op("binary", "mul", (0, 1)), op("binary", "mul", (3, 2))),
            (0, 4),
            matmul=True,
        ),
    }


@pytest.fixture(scope="module")
def bfloat16_tables():
    from burn_cuda import _dtypes

    _dtypes.add_bfloat16(np.dtype(ml_dtypes.bfloat16))


_DECLARE = re.compile(r"\b(?:const\s+)?(?:[A-Za-z_]\w*\s+)+v(\d+)\s*(?==|;)")
_USE = re.compile(r"\bv(\d+)\b")


def _values(code: str) -> None:
    """Each value in ``code`` (one scope's statements) is declared once, before it is read."""
    declared_at = {m.start(1) - 1: int(m.group(1)) for m in _DECLARE.finditer(code)}
    names = list(declared_at.values())
    assert len(names) == len(set(names)), f"a value declared twice: {sorted(names)}"
    seen: set[int] = set()
    for m in _USE.finditer(code):
        if m.start() in declared_at:
            seen.add(int(m.group(1)))
        else:
            assert int(m.group(1)) in seen, f"v{m.group(1)} read before it is declared"


def _check(src: str, reads: set[str]) -> str:
    """``src`` is well-formed: balanced brackets, each value declared once and before it is read
    (a reduce kernel's per-result block is a scope of its own), and every tensor or scalar name in
    ``reads`` (``l0``, ``s0``, ``o0``...) a parameter. Returns the parameter list."""
    for left, right in ("()", "{}", "[]"):
        assert src.count(left) == src.count(right), f"unbalanced {left}{right}"
    kernel = src[src.index('extern "C"') :]
    params = kernel[: kernel.index(") {")]
    for scope in kernel.split("if (lane == 0) {"):
        _values(scope)
    named = set(re.findall(r"\b([lso]\d+)\b", params))
    assert reads <= named, f"not parameters: {reads - named}"
    return params


def _names(src: str) -> set[str]:
    return set(re.findall(r"\b([lso]\d+)(?=\[|;|\)| =)", src))


@pytest.mark.parametrize("name", sorted(_elementwise()))
def test_elementwise_sources_are_well_formed(name, bfloat16_tables):
    from burn_cuda import _fusion
    from burn_cuda._renderer import dense_source, source, strided_source

    plan = _elementwise()[name]
    ins, outs, body = source(plan)
    assert [p.split()[-1] for p in ins.split(", ")] == [
        *(f"l{k}" for k in range(len(plan.inputs))),
        *(f"s{j}" for j in range(len(plan.scalars))),
    ]
    assert [p.split()[-1] for p in outs.split(", ")] == [f"o{j}" for j in range(len(plan.outputs))]
    _values(body)
    assert _names(body) <= {p.split()[-1] for p in f"{ins}, {outs}".split(", ")}
    assert body.count("\no") + body.startswith("o") == len(plan.outputs)  # one store per output
    if _fusion._dense_ok(plan):  # CuPy's float16 class is no plain C type: no dense kernel
        for aliased in (False, True):
            src = dense_source(plan, "k", aliased=aliased)
            head = _check(src, _names(src))
            assert ("__restrict__" in head) is not aliased
            assert all(f"l{k}[i]" in src for k in range(len(plan.inputs)))
            for rank in (0, 1, len(plan.shape)):
                src = strided_source(plan, "k", rank, aliased=aliased)
                head = _check(src, _names(src))
                assert ("__restrict__" in head) is not aliased
                assert all(f"l{k}[off{k}]" in src for k in range(len(plan.inputs)))
                assert head.count("const long long sh") == rank
                assert head.count("const long long st") == rank * len(plan.inputs)
                assert "unsigned int r = " in src  # coordinates in 32 bits below 2**31 elements
                assert "long long r = " in strided_source(plan, "k", rank, aliased=aliased, wide=True)


@pytest.mark.parametrize("name", sorted(_reduces()))
def test_reduce_sources_are_well_formed(name, bfloat16_tables):
    from burn_cuda._renderer import reduce_source

    plan = _reduces()[name]
    src = reduce_source(plan, "k")
    _check(src, _names(src))
    red = plan.reduce
    pre = red.pre_reads(plan)
    for k in range(len(plan.inputs)):  # the row walk reads the chain's inputs, the epilogue its own
        assert (f"l{k}[off{k}]" in src) is (k in pre)
        assert (f"l{k}[poff{k}]" in src) is (k in red.post_reads())
    assert src.count("[row] = ") == len(red.stores(plan))
    if "bfloat16" in src or bf16 in plan.inputs:
        assert "burn_bf16_to_f(l1[poff1])" in src  # bits converted, not read as a number


@pytest.mark.parametrize("name", sorted(_epilogues()))
@pytest.mark.parametrize("aliased", [False, True])
def test_gemm_epilogue_sources_are_well_formed(name, aliased):
    from burn_cuda._epilogue import TILES, gemm_source

    plan = _epilogues()[name]
    src = gemm_source(plan, "k", TILES["t64x64k8r4x4"], True, False, aliased)
    _check(src, _names(src))
    assert "const float v0 = (float)p;" in src and not re.search(r"\bl0\b", src)  # v0: the product
    assert src.count("[at] = ") == len(plan.outputs)


# ------------------------------------------------------------------ on a GPU: NVRTC compiles them
def test_every_source_compiles(cuda, bfloat16_tables):
    import cupy
    from burn_cuda import _fusion, _kernels
    from burn_cuda._epilogue import TILES, gemm_source
    from burn_cuda._renderer import dense_source, reduce_source, source, strided_source

    for name, plan in _elementwise().items():
        ins, outs, body = source(plan)
        kernel = cupy.ElementwiseKernel(ins, outs, body, f"burn_test_{name}", preamble=_kernels.PREAMBLE)
        args = [cupy.zeros(plan.shape, _fusion.param_dtype(_fusion.TO_NP[d])) for d in plan.inputs]
        args += _fusion._scalar_args(plan, [1] * len(plan.scalars))
        kernel(*args)
        if _fusion._dense_ok(plan):
            cupy.RawKernel(dense_source(plan, "k"), "k").compile()
            cupy.RawKernel(dense_source(plan, "k", aliased=True), "k").compile()
            for rank in (0, len(plan.shape)):
                cupy.RawKernel(strided_source(plan, "k", rank), "k").compile()
    for plan in _reduces().values():
        cupy.RawKernel(reduce_source(plan, "k"), "k").compile()
    for plan in _epilogues().values():
        for aliased in (False, True):
            cupy.RawKernel(
                gemm_source(plan, "k", TILES["t32x32k16r2x2"], False, True, aliased), "k"
            ).compile()
