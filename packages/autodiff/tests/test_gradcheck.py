"""Finite-difference checks (float64, central differences) of every backward rule, on every available
backend that supports float64. One or more rows per rule; a rule without a row fails the coverage test,
and each row must actually put its rule on the graph."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import burn
import numpy as np
import pytest
from burn import Tensor
from burn.backend import from_primitive
from burn_autodiff import RULES, gradcheck


def _float64_backends() -> list[str]:
    names = []
    for info in burn.backends():
        if info.available and burn.float64 in burn.device(info.name).backend.dtypes:
            names.append(info.name)
    return names


BACKENDS = _float64_backends()
# backends without float64 (WebGPU): their float32 gradients are compared with the numpy backend's
FLOAT32_BACKENDS = [i.name for i in burn.backends() if i.available and i.name not in BACKENDS]
_rng = np.random.default_rng(1234)


def R(*shape: int, lo: float = -2.0, hi: float = 2.0) -> np.ndarray:
    return _rng.uniform(lo, hi, size=shape)


def P(*shape: int) -> np.ndarray:
    """Positive values away from zero."""
    return R(*shape, lo=0.5, hi=2.0)


def away_from_zero(*shape: int) -> np.ndarray:
    x = R(*shape, lo=0.2, hi=2.0)
    return x * np.where(_rng.random(shape) < 0.5, -1.0, 1.0)


def distinct(*shape: int) -> np.ndarray:
    """Values with gaps well above eps (sort, max, pools: no ties)."""
    n = int(np.prod(shape))
    return (_rng.permutation(n) * 0.37 - n * 0.15).reshape(shape) + _rng.uniform(-0.05, 0.05, size=shape)


def bk(name: str, *args: Any) -> Tensor:
    """Call backend op ``name`` with tensors replaced by primitives; wrap the (first) result."""
    t = next(a for a in args if isinstance(a, Tensor))
    out = getattr(t.backend, name)(*(a.primitive if isinstance(a, Tensor) else a for a in args))
    return from_primitive(out[0] if isinstance(out, tuple) else out, t.backend)


def const(t: Tensor, value: Any, dtype: Any = None) -> Tensor:
    return burn.tensor(value, dtype=dtype, device=t.device)


@dataclass
class Case:
    rule: str
    fn: Any
    inputs: list[np.ndarray]
    id: str = ""
    tol: dict = field(default_factory=dict)


CASES: list[Case] = []


def case(rule: str, fn: Any, *inputs: np.ndarray, id: str = "", **tol: float) -> None:
    CASES.append(Case(rule, fn, list(inputs), id or rule, tol))


# ---------------------------------------------------------------- unary
_UNARY_DOMAIN = {
    "log": P,
    "log1p": P,
    "sqrt": P,
    "rsqrt": P,
    "reciprocal": away_from_zero,
    "asin": lambda *s: R(*s, lo=-0.8, hi=0.8),
    "acos": lambda *s: R(*s, lo=-0.8, hi=0.8),
    "tan": lambda *s: R(*s, lo=-1.2, hi=1.2),
    "abs": away_from_zero,
    "sign": away_from_zero,
    "relu": away_from_zero,
    "hard_sigmoid": lambda *s: R(*s, lo=-4.0, hi=4.0),
    "floor": lambda *s: np.floor(R(*s, lo=-3, hi=3)) + _rng.uniform(0.1, 0.9, size=s),
}
for _op in [k.split(":", 1)[1] for k in RULES if k.startswith("unary:")]:
    _dom = _UNARY_DOMAIN.get(_op, R)
    if _op in ("ceil", "round", "trunc"):
        _dom = _UNARY_DOMAIN["floor"]
    case(f"unary:{_op}", lambda x, op=_op: x._unary(op), _dom(3, 4))

# ---------------------------------------------------------------- binary (broadcasting and scalars)
case("binary:add", lambda a, b: a + b, R(3, 4), R(4), id="add-broadcast")
case("binary:add", lambda a: 2.5 + a, R(3), id="add-scalar")
case("binary:sub", lambda a, b: a - b, R(2, 1, 4), R(3, 1), id="sub-broadcast-both")
case("binary:sub", lambda a: 1.0 - a, R(3), id="rsub-scalar")
case("binary:mul", lambda a, b: a * b, R(3, 4), R(3, 1))
case("binary:mul", lambda a: a * 3.0, R(3), id="mul-scalar")
case("binary:div", lambda a, b: a / b, R(3, 4), away_from_zero(4))
case("binary:div", lambda a: 2.0 / a, away_from_zero(4), id="rdiv-scalar")
case("binary:pow", lambda a, b: a**b, P(3, 4), R(3, 4))
case("binary:pow", lambda a: a**3.0, R(5), id="pow-scalar-exp")
case("binary:pow", lambda b: 2.0**b, R(5), id="pow-scalar-base")
case("binary:maximum", lambda a, b: a.maximum(b), distinct(3, 4), distinct(4) + 0.013)
case("binary:minimum", lambda a, b: a.minimum(b), distinct(3, 4), distinct(3, 1) + 0.013)
case("binary:atan2", lambda a, b: a.atan2(b), R(3, 4), away_from_zero(3, 4))
case("binary:atan2", lambda a: a.atan2(0.7), R(3, 4), id="atan2-scalar")
case("binary:remainder", lambda a, b: a % b, R(3, 4, lo=-5, hi=5), away_from_zero(3, 4))
case("binary:fmod", lambda a, b: a.fmod(b), R(3, 4, lo=-5, hi=5), away_from_zero(3, 4))
case("binary:floor_div", lambda a, b: a // b, R(3, 4, lo=-5, hi=5), away_from_zero(4))

# ---------------------------------------------------------------- where, clamp, masks, casts, softmax
_cond = _rng.random((3, 4)) < 0.5
case("where", lambda a, b: burn.where(const(a, _cond), a, b), R(3, 4), R(4))
case("where", lambda a: burn.where(const(a, _cond), a, 0.5), R(3, 4), id="where-scalar")
case("clamp", lambda x: x.clamp(-0.7, 0.9), R(3, 4))
case("clamp", lambda x: x.clamp(min=0.1), R(3, 4), id="clamp-min")
case("mask_fill", lambda x: x.mask_fill(const(x, _cond[0]), -1.0), R(3, 4))
case("leaky_relu", lambda x: bk("leaky_relu", x, 0.1), away_from_zero(3, 4))
case(
    "cast",
    lambda x: x.cast(burn.float16 if x.dtype == burn.float32 else burn.float32).cast(x.dtype) * 1.5,
    R(3, 4),
    eps=1e-2,
    atol=1e-4,
    rtol=1e-4,
)
case("softmax", lambda x: bk("softmax", x, 1), R(3, 5))
case("log_softmax", lambda x: bk("log_softmax", x, 0), R(3, 5))

# ---------------------------------------------------------------- reductions, scans, matmul
case("reduce:sum", lambda x: x.sum(), R(3, 4), id="sum-all")
case("reduce:sum", lambda x: x.sum(1, keepdim=True), R(3, 4, 2), id="sum-keepdim")
case("reduce:sum", lambda x: x.sum((0, 2)), R(3, 4, 2), id="sum-dims")
case("reduce:mean", lambda x: x.mean(0), R(3, 4))
case("reduce:mean", lambda x: x.mean((1, 2), keepdim=True), R(2, 3, 4), id="mean-dims-keepdim")
case("reduce:prod", lambda x: x.prod(1), R(3, 4))
case("reduce:prod", lambda x: x.prod((0, 2)), R(2, 3, 2), id="prod-dims")
case("reduce:max", lambda x: x.max(1), distinct(3, 4))
case("reduce:max", lambda x: x.max(), distinct(3, 4), id="max-all")
case("reduce:min", lambda x: x.min(0, keepdim=True), distinct(3, 4))
case("var", lambda x: x.var(1), R(3, 4))
case("var", lambda x: x.std((0, 1), correction=0), R(3, 4), id="std-population")
case("cumsum", lambda x: x.cumsum(1), R(3, 4))
case("cumprod", lambda x: x.cumprod(0), away_from_zero(3, 4))
case("matmul", lambda a, b: a @ b, R(3, 4), R(4, 2))
case("matmul", lambda a, b: a @ b, R(2, 3, 4), R(4, 5), id="matmul-batch-broadcast")
case("matmul", lambda a, b: a @ b, R(2, 3, 4), R(1, 4, 5), id="matmul-batch-broadcast-1")
case("matmul", lambda a, b: a @ b, R(4), R(2, 4, 3), id="matmul-vector")

# ---------------------------------------------------------------- shape ops
case("reshape", lambda x: x.reshape(4, -1), R(2, 3, 2))
case("permute", lambda x: x.permute(2, 0, 1), R(2, 3, 4))
case("expand", lambda x: x.expand(2, 3, 4), R(3, 1))
case("slice", lambda x: x[1:, ::2], R(3, 5))
case("slice", lambda x: x[::-1, 1], R(3, 5), id="slice-negative-step")
# several slices of one input: their gradients are written together (a cat, a pad, or one buffer)
case("slice", lambda x: (lambda q, k, v: q * k + v.tanh())(*x.split(2, 2)), R(2, 3, 6), id="split-tiles")
case("slice", lambda x: (lambda a, _b, c, _d: a * c.sin())(*x.chunk(4, 1)), R(3, 8), id="chunk-gaps")
case("slice", lambda x: x[1:3, 1:4].exp(), R(4, 5), id="slice-window-pad")
case("slice", lambda x: x[:2, 1:] * x[1:, :3] + x[:2, :3], R(3, 4), id="slices-overlap")
case("slice", lambda x: x * x.split([2, 3], 1)[1].sum(), R(3, 5), id="slice-and-dense")
case("slice_assign", lambda x, v: x.slice_assign((slice(0, 2), slice(1, 3)), v), R(3, 4), R(2, 2))
case("cat", lambda a, b: burn.cat([a, b, a], 1), R(2, 3), R(2, 2))
case("cat", lambda x: burn.cat(x.split([1, 2], 0)[::-1], 0), R(3, 2), id="split-cat")
case("stack", lambda a, b: burn.stack([a, b], 1), R(2, 3), R(2, 3))
case("flip", lambda x: x.flip((0, 2)), R(2, 3, 2))
case("repeat", lambda x: x.repeat(2, 1, 3), R(2, 3))
case("pad", lambda x: x.pad((1, 2, 0, 1), "constant", 0.5), R(2, 3, 4), id="pad-constant")
case("pad", lambda x: x.pad((2, 1, 1, 2), "reflect"), R(2, 3, 4), id="pad-reflect")
case("pad", lambda x: x.pad((2, 3, 1, 0), "edge"), R(2, 3, 4), id="pad-edge")
case("tril", lambda x: x.tril(0), R(2, 3, 4))
case("triu", lambda x: x.triu(1), R(3, 4))

# ---------------------------------------------------------------- indexing ops
_gidx = _rng.integers(0, 4, size=(3, 5))
case("gather", lambda x: x.gather(1, const(x, _gidx)), R(3, 4))
case("scatter_add", lambda x, s: x.scatter_add(1, const(x, _gidx), s), R(3, 4), R(3, 5))
case("select", lambda x: x.select(0, const(x, [2, 0, 2, 1])), R(3, 4))
case("select_add", lambda x, v: x.select_add(1, const(x, [3, 0, 3]), v), R(2, 4), R(2, 3))
case("sort", lambda x: x.sort(1, descending=True), distinct(3, 5))
case("sort", lambda x: x.sort(0), distinct(4, 3), id="sort-ascending")
case("topk", lambda x: x.topk(2, 1), distinct(3, 5))
case("embedding", lambda w: bk("embedding", w, const(w, [[0, 3], [3, 1]])), R(5, 3))
# a tied table: the lookup's rows are added into the head's dense gradient
case(
    "embedding",
    lambda w: bk("embedding", w, const(w, [[0, 3], [3, 1]])) @ w.transpose(),
    R(5, 3),
    id="embedding-tied",
)
case("select", lambda x: x.select(1, const(x, [1, 1, 3])) * x[:, :3], R(3, 4), id="select-and-slice")


# ---------------------------------------------------------------- module ops
def _conv(stride, padding, dilation, groups):
    return lambda x, w, b: bk("conv", x, w, b, stride, padding, dilation, groups)


def _conv_t(stride, padding, out_pad, dilation, groups):
    return lambda x, w, b: bk("conv_transpose", x, w, b, stride, padding, out_pad, dilation, groups)


case("conv", _conv((1,), (1,), (1,), 1), R(2, 2, 5), R(3, 2, 3), R(3), id="conv1d")
# offsets with fractional parts in [0.25, 0.75]: no sample crosses a pixel (a kink) within eps
_OFFSETS = np.floor(R(1, 18, 4, 4)) + _rng.uniform(0.25, 0.75, size=(1, 18, 4, 4))
case(
    "deform_conv2d",
    lambda x, off, w, b: burn.nn.functional.deform_conv2d(x, off, w, b, padding=1),
    R(1, 2, 4, 4),
    _OFFSETS,
    R(2, 2, 3, 3),
    R(2),
)
case(
    "deform_conv2d",
    lambda x, off, w, m: burn.nn.functional.deform_conv2d(x, off, w, None, padding=1, mask=m),
    R(1, 2, 4, 4),
    _OFFSETS,
    R(2, 2, 3, 3),
    P(1, 9, 4, 4),
    id="deform_conv2d-mask",
)
_BOXES = [[0.0, 0.6, 0.7, 4.3, 3.9], [1.0, 1.2, 0.4, 5.1, 4.6]]  # (batch, x1, y1, x2, y2)
case(
    "roi_align",
    lambda x: burn.nn.functional.roi_align(x, const(x, _BOXES, x.dtype), (2, 3), sampling_ratio=2),
    R(2, 2, 5, 6),
)
case(
    "conv", _conv((2, 1), (1, 2), (1, 2), 2), R(1, 4, 5, 6), R(4, 2, 3, 2), R(4), id="conv2d-groups-dilation"
)
case(
    "conv", _conv((2, 2), (0, 1), (1, 1), 1), R(2, 1, 5, 4), R(2, 1, 2, 3), R(2), id="conv2d-stride-remainder"
)
case("conv", _conv((1, 1, 2), (1, 0, 1), (1, 1, 1), 1), R(1, 1, 3, 3, 4), R(2, 1, 2, 2, 2), R(2), id="conv3d")
case("conv_transpose", _conv_t((2,), (1,), (1,), (1,), 1), R(2, 2, 4), R(2, 3, 3), R(3), id="conv_t1d")
case(
    "conv_transpose",
    _conv_t((2, 1), (1, 0), (1, 0), (1, 2), 2),
    R(1, 4, 3, 3),
    R(4, 1, 3, 2),
    R(2),
    id="conv_t2d-groups-dilation",
)
case(
    "max_pool", lambda x: bk("max_pool", x, (3,), (2,), (1,), (1,), False), distinct(2, 2, 7), id="max_pool1d"
)
case(
    "max_pool",
    lambda x: bk("max_pool", x, (2, 2), (2, 1), (1, 0), (1, 2), True),
    distinct(1, 2, 5, 6),
    id="max_pool2d-ceil-dilation",
)
case("adaptive_max_pool", lambda x: bk("adaptive_max_pool", x, (2, 3)), distinct(1, 2, 5, 7))
case("avg_pool", lambda x: bk("avg_pool", x, (3,), (2,), (1,), True, False), R(2, 2, 7), id="avg_pool1d-pad")
case(
    "avg_pool",
    lambda x: bk("avg_pool", x, (2, 3), (2, 2), (1, 1), False, True),
    R(1, 2, 5, 6),
    id="avg_pool2d-exclude-pad-ceil",
)
case("adaptive_avg_pool", lambda x: bk("adaptive_avg_pool", x, (3, 2)), R(1, 2, 5, 7))
case("adaptive_avg_pool", lambda x: bk("adaptive_avg_pool", x, (4,)), R(2, 2, 6), id="adaptive_avg_pool1d")
case(
    "interpolate",
    lambda x: bk("interpolate", x, (5, 3), "nearest", False),
    R(1, 2, 3, 4),
    id="interp-nearest",
)
case(
    "interpolate",
    lambda x: bk("interpolate", x, (5, 7), "bilinear", False),
    R(1, 2, 3, 4),
    id="interp-bilinear",
)
case(
    "interpolate",
    lambda x: bk("interpolate", x, (4, 6), "bilinear", True),
    R(1, 1, 3, 4),
    id="interp-bilinear-align",
)
case(
    "interpolate",
    lambda x: bk("interpolate", x, (6, 5), "bicubic", False),
    R(1, 1, 4, 4),
    id="interp-bicubic",
)
# 3-d pools (issue 32) through the public functions: the n-d rules with three spatial dims
case(
    "max_pool",
    lambda x: burn.nn.functional.max_pool3d(x, (2, 3, 2), (2, 1, 2), (1, 1, 0), (1, 1, 2), True),
    distinct(1, 2, 4, 5, 6),
    id="max_pool3d-pad-dilation-ceil",
)
case(
    "avg_pool",
    lambda x: burn.nn.functional.avg_pool3d(x, (3, 2, 2), (2, 1, 2), (1, 1, 0), True, True),
    R(1, 2, 5, 4, 5),
    id="avg_pool3d-include-pad-ceil",
)
case(
    "avg_pool",
    lambda x: burn.nn.functional.avg_pool3d(x, 3, 2, 1, count_include_pad=False),
    R(2, 1, 4, 5, 4),
    id="avg_pool3d-exclude-pad",
)
case(
    "adaptive_max_pool",
    lambda x: burn.nn.functional.adaptive_max_pool3d(x, (2, 3, 2)),
    distinct(1, 2, 3, 5, 4),
    id="adaptive_max_pool3d",
)
case(
    "adaptive_avg_pool",
    lambda x: burn.nn.functional.adaptive_avg_pool3d(x, (2, None, 3)),
    R(1, 2, 5, 3, 7),
    id="adaptive_avg_pool3d",
)


# fused attention (last, so its draws leave the other rows' inputs as they were): q, k, v with L=3
# queries, S=4 keys, E=4, Ev=3; causal, a broadcast bool mask with a fully masked row (zero gradients),
# a float mask with 3-d inputs and k/v broadcast over the batch
_SDPA = burn.nn.functional.scaled_dot_product_attention
# a burn.custom op: its user backward (two inputs, an attribute) against finite differences
_CUSTOM = burn.custom.op(
    "gradcheck_tanh_mix",
    kernels={"cpu": lambda x, y, a: np.tanh(a * x) * y},
    compose=lambda x, y, a: (x * a).tanh() * y,
    backward=lambda ctx, g: [
        g * ctx.inputs[1] * ctx.attrs["a"] * (1 - (ctx.inputs[0] * ctx.attrs["a"]).tanh() ** 2),
        g * (ctx.inputs[0] * ctx.attrs["a"]).tanh(),
    ],
)
case("custom", lambda x, y: _CUSTOM(x, y, a=0.7), R(3, 4), R(3, 4))
_ATT_FLOAT = R(3, 4).tolist()  # a float mask is a constant: it gets no gradient
_ATT_MASK = [[[[True, False, True, True], [False, False, False, False], [True, True, False, True]]]]
case("attention", lambda q, k, v: _SDPA(q, k, v, is_causal=True), R(2, 2, 3, 4), R(2, 2, 4, 4), R(2, 2, 4, 3))
case(
    "attention",
    lambda q, k, v: _SDPA(q, k, v, attn_mask=const(q, _ATT_MASK, burn.bool_)),
    R(2, 2, 3, 4),
    R(2, 2, 4, 4),
    R(2, 2, 4, 3),
    id="attention-bool-mask",
)
case(
    "attention",
    lambda q, k, v: _SDPA(q, k, v, attn_mask=const(q, _ATT_FLOAT, q.dtype), scale=0.7),
    R(2, 3, 4),
    R(1, 4, 4),
    R(1, 4, 3),
    id="attention-float-mask-3d",
)


def test_every_rule_has_a_gradcheck_row():
    covered = {c.rule for c in CASES}
    missing = sorted(set(RULES) - covered)
    assert not missing, f"rules without a gradcheck row: {missing}"
    unknown = sorted(covered - set(RULES))
    assert not unknown, f"gradcheck rows for unknown rules: {unknown}"


def test_backends_found():
    assert "ndarray" in BACKENDS


@pytest.mark.parametrize("checkpointing", ["none", "balanced"])
@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("c", CASES, ids=lambda c: c.id)
def test_gradcheck(backend: str, c: Case, checkpointing: str):
    dev = burn.device(backend, autodiff=True, checkpointing=checkpointing)
    tol = {"eps": 1e-6, "atol": 1e-6, "rtol": 1e-5, **c.tol}
    fn = c.fn
    if checkpointing == "balanced":
        # route inputs through a memory-bound op first, so the rule reads recomputed values
        def fn(*xs):
            return c.fn(*(x * 1.0 for x in xs))

    report = gradcheck(fn, c.inputs, dev, **tol)
    assert c.rule in report.rules, f"row {c.id} did not record rule {c.rule} (graph: {sorted(report.rules)})"


# ---------------------------------------------------------------- ops without a rule of their own
# These run through compositions of ruled ops when their input is tracked (unfold4d through conv) or
# are frontend compositions; checked the same way so the composition is differentiated correctly.
COMPOSED = [
    Case("unfold4d", lambda x: bk("unfold4d", x, (2, 3), (1, 2), (1, 0), (2, 1)), [R(1, 2, 5, 6)]),
    Case("layer_norm", lambda x, w, b: burn.nn.functional.layer_norm(x, (4,), w, b), [R(3, 4), R(4), R(4)]),
    Case(
        "cross_entropy",
        lambda x: burn.nn.functional.cross_entropy(x, const(x, [2, 0, 1])),
        [R(3, 4)],
    ),
]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("c", COMPOSED, ids=lambda c: c.rule)
def test_gradcheck_composed(backend: str, c: Case):
    gradcheck(c.fn, c.inputs, burn.device(backend, autodiff=True))


def _float32_grads(c: Case, dev: Any) -> list[np.ndarray]:
    xs = [burn.tensor(a.astype(np.float32), device=dev).require_grad() for a in c.inputs]
    out = c.fn(*xs)
    seed = np.random.default_rng(0).standard_normal(out.shape).astype(np.float32)
    grads = out.backward(burn.tensor(seed, device=dev))
    return [
        np.zeros(a.shape) if x.grad(grads) is None else x.grad(grads).numpy() for x, a in zip(xs, c.inputs)
    ]


@pytest.mark.parametrize("backend", FLOAT32_BACKENDS)
def test_float32_backend_gradients_match_numpy(backend: str):
    """Every row once, float32, on a backend without float64 against the (gradchecked) numpy backend."""
    ref_dev, dev = burn.device("cpu", autodiff=True), burn.device(backend, autodiff=True)
    problems = []
    for c in CASES + COMPOSED:
        try:
            want, got = _float32_grads(c, ref_dev), _float32_grads(c, dev)
        except Exception as exc:  # report every failing row at once
            problems.append(f"{c.id}: {type(exc).__name__}: {exc}")
            continue
        for i, (a, b) in enumerate(zip(want, got)):
            if not np.allclose(b, a, rtol=1e-3, atol=1e-4):
                problems.append(f"{c.id}: input {i} max abs diff {np.abs(a - b).max():.3g}")
    assert not problems, "\n".join(problems)
