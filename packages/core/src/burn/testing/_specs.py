"""The conformance table: one row per op. Adding an op = one row.

Each ``OpSpec`` has a ``name``; ``inputs(rng, dtype)``, a list of numpy arrays generated for one dtype
name; ``call(ctx, *tensors)``, the burn expression (``ctx.device``/``ctx.dtype`` for creation ops;
it returns a tensor or a tuple of tensors); the ``dtypes`` it runs for; an optional ``ref`` numpy
formulation (checked on the numpy backend itself); and tolerances per dtype (``tol`` overrides).

Every backend's result is compared with the numpy backend's result on the same inputs: same shape,
same dtype, values within the dtype's tolerance (NaNs must match).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

import burn

F16, F32, F64, BF16 = "float16", "float32", "float64", "bfloat16"
# bfloat16 rows compare with the numpy backend's float32 result on the same (bfloat16) inputs
FLOATS = (F32, F64, F16, BF16)
INTS = ("int32", "int64")
NUM = (*FLOATS, *INTS)
ALL = (*NUM, "int8", "uint8", "bool")

# (rtol, atol) per dtype; ints and bool compare exactly
# inputs(rng, dtype name) -> the op's input arrays
Inputs = Callable[[np.random.Generator, str], list[np.ndarray]]

TOL = {F16: (1e-2, 1e-2), "bfloat16": (2e-2, 2e-2), F32: (1e-5, 1e-5), F64: (1e-10, 1e-10)}


@dataclass(frozen=True)
class OpSpec:
    name: str
    call: Callable[..., Any]
    inputs: Inputs
    dtypes: tuple[str, ...] = FLOATS
    ref: Callable[..., Any] | None = None
    tol: dict[str, tuple[float, float]] = field(default_factory=dict)

    def tolerance(self, dtype: str) -> tuple[float, float]:
        return self.tol.get(dtype, TOL.get(dtype, (0.0, 0.0)))


@dataclass(frozen=True)
class Ctx:
    device: Any
    dtype: Any  # the burn dtype of the case


# ---------------------------------------------------------------- input generators
def _values(rng: np.random.Generator, dtype: str, shape: tuple[int, ...], kind: str) -> np.ndarray:
    if dtype == "bool":
        return rng.random(shape) < 0.5
    if dtype in INTS or dtype in ("int8", "uint8"):
        lo = 1 if kind in ("pos", "unit") else (0 if dtype == "uint8" else -5)
        return rng.integers(lo, 6, shape).astype(dtype)
    draw: dict[str, Callable[[tuple[int, ...]], Any]] = {
        "normal": rng.standard_normal,
        "pos": lambda s: rng.random(s) + 0.1,
        "unit": lambda s: rng.random(s) * 1.8 - 0.9,
    }
    return np.asarray(draw[kind](shape)).astype(np_dtype(dtype))


def np_dtype(name: str) -> np.dtype:
    """The numpy dtype of a dtype name; ``"bfloat16"`` is ml_dtypes' (imported here, on first use)."""
    return burn.backend.NUMPY_DTYPES[burn.dtype(name)]


def gen(*shapes: tuple[int, ...], kind: str = "normal") -> Inputs:
    return lambda rng, dtype: [_values(rng, dtype, s, kind) for s in shapes]


def with_index(
    shape: tuple[int, ...], index_shape: tuple[int, ...], high: int, extra: bool = False
) -> Inputs:
    """A value tensor, an int64 index tensor with values in [0, high), optionally a src like the index."""

    def make(rng: np.random.Generator, dtype: str) -> list[np.ndarray]:
        out = [_values(rng, dtype, shape, "normal"), rng.integers(0, high, index_shape).astype(np.int64)]
        if extra:
            out.append(_values(rng, dtype, index_shape, "normal"))
        return out

    return make


def with_mask(shape: tuple[int, ...], mask_shape: tuple[int, ...] | None = None) -> Inputs:
    return lambda rng, dtype: [_values(rng, dtype, shape, "normal"), rng.random(mask_shape or shape) < 0.5]


NONE: Inputs = lambda rng, dtype: []  # noqa: E731  (creation ops take no inputs)
S = (3, 4)
B3 = (2, 3, 4)


def _erf(x: np.ndarray) -> np.ndarray:
    return np.vectorize(math.erf)(x.astype(np.float64)).astype(x.dtype)


def _conv_weight_grad(c: Any, x: Any, g: Any) -> Any:
    """The backend's ``conv_weight_grad`` called directly: the (6, 2, 3, 3) weight gradient of a conv
    with 2 groups, stride 2 and padding 1 for the output gradient g."""
    b = x.backend
    dw = b.conv_weight_grad(x.primitive, g.primitive, (6, 2, 3, 3), (2, 2), (1, 1), (1, 1), 2)
    return burn.backend.from_primitive(dw, b)


def _module_fn(name: str) -> Callable[..., Any]:
    """``burn.nn.functional.<name>`` looked up when the row runs (module ops are written separately)."""

    def call(*args: Any, **kwargs: Any) -> Any:
        import pytest

        try:
            import burn.nn.functional as F
        except Exception as exc:  # the module is being written; a broken import is a reason, not a pass
            pytest.skip(f"burn.nn.functional does not import yet: {type(exc).__name__}: {exc}")
        fn = getattr(F, name, None)
        if fn is None:
            pytest.skip(f"burn.nn.functional.{name} does not exist yet")
        return fn(*args, **kwargs)

    return call


def _unary_rows() -> list[OpSpec]:
    table: dict[str, tuple[str, Callable[..., Any], tuple[str, ...]]] = {
        # name: (input kind, numpy reference, dtypes)
        "abs": ("normal", np.abs, NUM),
        "neg": ("normal", np.negative, NUM),
        "exp": ("normal", np.exp, FLOATS),
        "expm1": ("normal", np.expm1, FLOATS),
        "log": ("pos", np.log, FLOATS),
        "log1p": ("pos", np.log1p, FLOATS),
        "sqrt": ("pos", np.sqrt, NUM),
        "rsqrt": ("pos", lambda x: 1 / np.sqrt(x), FLOATS),
        "square": ("normal", np.square, NUM),
        "sin": ("normal", np.sin, FLOATS),
        "cos": ("normal", np.cos, FLOATS),
        "tan": ("unit", np.tan, FLOATS),
        "asin": ("unit", np.arcsin, FLOATS),
        "acos": ("unit", np.arccos, FLOATS),
        "atan": ("normal", np.arctan, FLOATS),
        "sinh": ("normal", np.sinh, FLOATS),
        "cosh": ("normal", np.cosh, FLOATS),
        "tanh": ("normal", np.tanh, FLOATS),
        "sigmoid": ("normal", lambda x: 1 / (1 + np.exp(-x)), FLOATS),
        "relu": ("normal", lambda x: np.maximum(x, 0), NUM),
        "erf": ("normal", _erf, FLOATS),
        "floor": ("normal", np.floor, FLOATS),
        "ceil": ("normal", np.ceil, FLOATS),
        "round": ("normal", np.round, FLOATS),
        "trunc": ("normal", np.trunc, FLOATS),
        "sign": ("normal", np.sign, NUM),
        "reciprocal": ("pos", np.reciprocal, FLOATS),
        "isnan": ("normal", np.isnan, FLOATS),
        "isinf": ("normal", np.isinf, FLOATS),
        "logical_not": ("normal", np.logical_not, ALL),
    }
    rows = []
    for name, (kind, ref, dtypes) in table.items():
        rows.append(
            OpSpec(
                name,
                lambda c, x, _n=name: getattr(x, _n)(),
                gen(S, kind=kind),
                dtypes,
                ref if dtypes == FLOATS else None,
                tol={F32: (2e-5, 2e-5)},
            )
        )
    return rows


def _binary_rows() -> list[OpSpec]:
    table = {
        "add": (lambda a, b: a + b, "normal", NUM),
        "sub": (lambda a, b: a - b, "normal", NUM),
        "mul": (lambda a, b: a * b, "normal", ALL),
        "truediv": (lambda a, b: a / b, "pos", NUM),
        "floordiv": (lambda a, b: a // b, "pos", NUM),
        "remainder": (lambda a, b: a % b, "pos", NUM),
        "fmod": (lambda a, b: a.fmod(b), "pos", NUM),
        "pow": (lambda a, b: a**b, "pos", FLOATS),
        "maximum": (lambda a, b: a.maximum(b), "normal", NUM),
        "minimum": (lambda a, b: a.minimum(b), "normal", NUM),
        "atan2": (lambda a, b: a.atan2(b), "normal", FLOATS),
        "eq": (lambda a, b: a == b, "normal", ALL),
        "ne": (lambda a, b: a != b, "normal", ALL),
        "lt": (lambda a, b: a < b, "normal", NUM),
        "le": (lambda a, b: a <= b, "normal", NUM),
        "gt": (lambda a, b: a > b, "normal", NUM),
        "ge": (lambda a, b: a >= b, "normal", NUM),
        "and": (lambda a, b: a & b, "normal", ("bool", "int32", "int64", "uint8")),
        "or": (lambda a, b: a | b, "normal", ("bool", "int32", "int64", "uint8")),
        "xor": (lambda a, b: a ^ b, "normal", ("bool", "int32", "int64", "uint8")),
    }
    rows = []
    for name, (fn, kind, dtypes) in table.items():
        rows.append(
            OpSpec(
                name, lambda c, a, b, _f=fn: _f(a, b), gen(S, S, kind=kind), dtypes, tol={F16: (2e-2, 2e-2)}
            )
        )
        rows.append(
            OpSpec(
                f"{name}_broadcast",
                lambda c, a, b, _f=fn: _f(a, b),
                gen((2, 1, 4), (3, 1), kind=kind),
                dtypes,
            )
        )
    scalar_rows = [
        OpSpec("add_scalar", lambda c, a: a + 2, gen(S), NUM),
        OpSpec("rsub_scalar", lambda c, a: 3 - a, gen(S), NUM),
        OpSpec("mul_float_scalar", lambda c, a: a * 1.5, gen(S), NUM),
        OpSpec("rtruediv_scalar", lambda c, a: 2.0 / a, gen(S, kind="pos"), NUM),
        OpSpec("rpow_scalar", lambda c, a: 2.0**a, gen(S), FLOATS),
        OpSpec("pow_scalar", lambda c, a: a**2, gen(S), NUM),
        OpSpec("remainder_neg_scalar", lambda c, a: a % -1.5, gen(S), FLOATS),
        OpSpec("fmod_neg_scalar", lambda c, a: a.fmod(-1.5), gen(S), FLOATS),
        OpSpec("lt_scalar", lambda c, a: a < 0.5, gen(S), NUM),
        OpSpec("rgt_scalar", lambda c, a: 0 > a, gen(S), NUM),
        OpSpec("clamp", lambda c, a: a.clamp(-0.5, 0.5), gen(S), FLOATS),
        OpSpec("clamp_int", lambda c, a: a.clamp(-2, 3), gen(S), NUM),
        OpSpec("clamp_min", lambda c, a: a.clamp_min(0), gen(S), NUM),
    ]
    return rows + scalar_rows


def _reduction_rows() -> list[OpSpec]:
    rows = []
    for name in ("sum", "mean", "prod", "max", "min"):
        dtypes = FLOATS if name == "mean" else NUM
        for label, dim, keep in (("all", None, False), ("dim1", 1, False), ("dims02_keep", (0, 2), True)):
            rows.append(
                OpSpec(
                    f"{name}_{label}",
                    lambda c, x, _n=name, _d=dim, _k=keep: getattr(x, _n)(_d, keepdim=_k),
                    gen(B3, kind="pos" if name == "prod" else "normal"),
                    dtypes,
                    tol={F16: (2e-2, 5e-2)},
                )
            )
    rows += [
        OpSpec("sum_bool", lambda c, x: x.sum(1), gen(B3), ("bool",)),
        OpSpec("all_dim", lambda c, x: x.all(1), gen(B3), ALL),
        OpSpec("any_all", lambda c, x: x.any(), gen(B3), ALL),
        OpSpec("argmax", lambda c, x: x.argmax(1), gen(B3), NUM),
        OpSpec("argmin_keep", lambda c, x: x.argmin(-1, keepdim=True), gen(B3), NUM),
        OpSpec("argmax_flat", lambda c, x: x.argmax(), gen(B3), NUM),
        OpSpec(
            "var",
            lambda c, x: x.var(1),
            gen(B3),
            FLOATS,
            lambda x: np.var(x, 1, ddof=1),
            tol={F16: (3e-2, 3e-2)},
        ),
        OpSpec("var_pop_all", lambda c, x: x.var(correction=0), gen(B3), FLOATS, lambda x: np.var(x)),
        OpSpec("std", lambda c, x: x.std((0, 2), keepdim=True), gen(B3), FLOATS, tol={F16: (3e-2, 3e-2)}),
        OpSpec("max_dim_with_indices", lambda c, x: x.max_dim_with_indices(1), gen(B3), NUM),
        OpSpec("min_dim_with_indices", lambda c, x: x.min_dim_with_indices(2), gen(B3), NUM),
    ]
    return rows


def _shape_rows() -> list[OpSpec]:
    return [
        OpSpec("reshape", lambda c, x: x.reshape(4, -1), gen(B3), ALL, lambda x: x.reshape(4, -1)),
        OpSpec("permute", lambda c, x: x.permute(2, 0, 1), gen(B3), ALL, lambda x: x.transpose(2, 0, 1)),
        OpSpec("transpose", lambda c, x: x.transpose(0, 2), gen(B3), ALL, lambda x: x.swapaxes(0, 2)),
        OpSpec("flatten", lambda c, x: x.flatten(1), gen(B3), ALL, lambda x: x.reshape(2, 12)),
        OpSpec("unsqueeze_squeeze", lambda c, x: x.unsqueeze(1).squeeze(1), gen(B3), ALL, lambda x: x),
        OpSpec(
            "expand",
            lambda c, x: x.expand(2, 3, 4),
            gen((3, 1)),
            ALL,
            lambda x: np.broadcast_to(x, (2, 3, 4)),
        ),
        OpSpec("repeat", lambda c, x: x.repeat(2, 1, 3), gen(B3), ALL, lambda x: np.tile(x, (2, 1, 3))),
        OpSpec("flip", lambda c, x: x.flip((0, 2)), gen(B3), ALL, lambda x: x[::-1, :, ::-1]),
        OpSpec("narrow", lambda c, x: x.narrow(2, 1, 2), gen(B3), ALL, lambda x: x[:, :, 1:3]),
        OpSpec("getitem_steps", lambda c, x: x[:, ::-2, 1::2], gen(B3), ALL, lambda x: x[:, ::-2, 1::2]),
        OpSpec(
            "getitem_none_ellipsis", lambda c, x: x[None, ..., 1], gen(B3), ALL, lambda x: x[None, ..., 1]
        ),
        OpSpec("getitem_int_tensor", lambda c, x: x[:, [2, 0, 2]], gen(B3), ALL, lambda x: x[:, [2, 0, 2]]),
        OpSpec(
            "slice_assign",
            lambda c, x, v: x.slice_assign((slice(None), slice(None, None, -2)), v),
            gen(B3, (2, 2, 4)),
            ALL,
        ),
        OpSpec(
            "cat",
            lambda c, a, b: burn.cat([a, b], 1),
            gen(B3, (2, 2, 4)),
            ALL,
            lambda a, b: np.concatenate([a, b], 1),
        ),
        OpSpec(
            "stack",
            lambda c, a, b: burn.stack([a, b], -1),
            gen(B3, B3),
            ALL,
            lambda a, b: np.stack([a, b], -1),
        ),
        OpSpec("split", lambda c, x: tuple(x.split([1, 3], dim=2)), gen(B3), ALL),
        OpSpec("chunk", lambda c, x: tuple(x.chunk(2, dim=1)), gen(B3), ALL),
    ]


def _select_add_inputs(rng: np.random.Generator, dtype: str) -> list[np.ndarray]:
    return [_values(rng, dtype, S, "normal"), rng.integers(0, 3, (5,)), _values(rng, dtype, (5, 4), "normal")]


def _index_rows() -> list[OpSpec]:
    return [
        OpSpec("gather", lambda c, x, i: x.gather(1, i), with_index(S, (3, 6), 4), NUM),
        OpSpec("gather_smaller_index", lambda c, x, i: x.gather(0, i), with_index(S, (5, 2), 3), NUM),
        OpSpec("scatter_add", lambda c, x, i, s: x.scatter_add(1, i, s), with_index(S, (3, 6), 4, True), NUM),
        OpSpec("select", lambda c, x, i: x.select(1, i), with_index(S, (7,), 4), ALL),
        OpSpec("select_add", lambda c, x, i, v: x.select_add(0, i, v), _select_add_inputs, NUM),
        OpSpec("mask_fill", lambda c, x, m: x.mask_fill(m, 2), with_mask(S), ALL),
        OpSpec("mask_fill_broadcast", lambda c, x, m: x.mask_fill(m, -1), with_mask(B3, (3, 1)), NUM),
        OpSpec("where", lambda c, x, m: burn.where(m, x, -x), with_mask(S), NUM),
        OpSpec("where_scalar", lambda c, x, m: burn.where(m, 0, x), with_mask(S, (1, 4)), NUM),
        OpSpec(
            "one_hot", lambda c, i: i.one_hot(5), lambda rng, d: [rng.integers(0, 5, (2, 3)).astype(d)], INTS
        ),
        OpSpec("tril", lambda c, x: x.tril(-1), gen(B3), ALL, lambda x: np.tril(x, -1)),
        OpSpec("triu", lambda c, x: x.triu(1), gen(B3), ALL, lambda x: np.triu(x, 1)),
    ]


def _ties(rng: np.random.Generator, dtype: str) -> list[np.ndarray]:
    """Values with many ties, so sort stability shows."""
    return [rng.integers(0, 4, B3).astype(dtype)]


def _sort_rows() -> list[OpSpec]:
    return [
        OpSpec("sort", lambda c, x: x.sort(-1), gen(B3), NUM, lambda x: np.sort(x, -1)),
        OpSpec("sort_with_indices_desc", lambda c, x: x.sort_with_indices(1, descending=True), _ties, NUM),
        OpSpec("argsort", lambda c, x: x.argsort(0), _ties, NUM, lambda x: np.argsort(x, 0, kind="stable")),
        OpSpec("argsort_desc", lambda c, x: x.argsort(-1, descending=True), _ties, NUM),
        OpSpec("topk", lambda c, x: x.topk(2, 2), gen(B3), NUM),
        OpSpec("topk_with_indices", lambda c, x: x.topk_with_indices(3, 1), gen(B3), NUM),
        OpSpec("cumsum", lambda c, x: x.cumsum(1), gen(B3), NUM, tol={F16: (2e-2, 3e-2)}),
        OpSpec("cumprod", lambda c, x: x.cumprod(2), gen(B3, kind="pos"), NUM, tol={F16: (2e-2, 3e-2)}),
    ]


def _pad_rows() -> list[OpSpec]:
    rows = []
    for mode in ("constant", "reflect", "edge"):
        rows.append(
            OpSpec(f"pad_{mode}", lambda c, x, _m=mode: x.pad((1, 2, 2, 1), mode=_m, value=3), gen(B3), NUM)
        )
    rows.append(OpSpec("pad_constant_3d", lambda c, x: x.pad((0, 1, 1, 0, 1, 1)), gen(B3), ALL))
    return rows


def _matmul_rows() -> list[OpSpec]:
    tol = {F32: (1e-4, 1e-4), F16: (2e-2, 5e-2)}
    return [
        OpSpec("matmul", lambda c, a, b: a @ b, gen((5, 7), (7, 3)), NUM, lambda a, b: a @ b, tol),
        OpSpec(
            "matmul_batched_broadcast", lambda c, a, b: a @ b, gen((2, 1, 3, 4), (5, 4, 2)), NUM, None, tol
        ),
        OpSpec("matmul_vec", lambda c, a, b: a @ b, gen((4,), (4, 3)), NUM, None, tol),
        OpSpec("dot", lambda c, a, b: a.dot(b), gen((6,), (6,)), NUM, None, tol),
    ]


def _cast_rows() -> list[OpSpec]:
    rows = []
    targets = ["float32", "float64", "float16", "int32", "int64", "int8", "uint8", "bool"]
    if burn.bfloat16 in burn.device("cpu").backend.dtypes:  # the reference holds bfloat16 (ml_dtypes)
        targets.insert(3, "bfloat16")
    for target in targets:
        rows.append(
            OpSpec(
                f"cast_to_{target}",
                lambda c, x, _t=target: (x * 3 if not x.dtype.is_bool else x).cast(_t),
                gen(S, kind="pos"),
                ALL,
            )
        )
    return rows


def _creation_rows() -> list[OpSpec]:
    def rand(c: Ctx) -> Any:
        burn.seed(11)
        return burn.rand((3, 4), dtype=c.dtype, device=c.device)

    def randn(c: Ctx) -> Any:
        burn.seed(12)
        return burn.randn((3, 4), dtype=c.dtype, device=c.device)

    def randint(c: Ctx) -> Any:
        burn.seed(13)
        return burn.randint(-3, 7, (3, 4), dtype=c.dtype, device=c.device)

    def bernoulli(c: Ctx) -> Any:
        burn.seed(14)
        return burn.bernoulli((3, 4), 0.3, dtype=c.dtype, device=c.device)

    return [
        OpSpec("zeros", lambda c: burn.zeros(2, 3, dtype=c.dtype, device=c.device), NONE, ALL),
        OpSpec("ones", lambda c: burn.ones((2, 3), dtype=c.dtype, device=c.device), NONE, ALL),
        OpSpec("full", lambda c: burn.full((2, 2), 1, dtype=c.dtype, device=c.device), NONE, ALL),
        OpSpec("arange", lambda c: burn.arange(1, 11, 3, dtype=c.dtype, device=c.device), NONE, NUM),
        OpSpec("linspace", lambda c: burn.linspace(-1, 1, 9, dtype=c.dtype, device=c.device), NONE, FLOATS),
        OpSpec("eye", lambda c: burn.eye(3, 4, dtype=c.dtype, device=c.device), NONE, ALL),
        OpSpec("tensor", lambda c: burn.tensor([[1, 2], [3, 4]], dtype=c.dtype, device=c.device), NONE, ALL),
        OpSpec("zeros_like", lambda c, x: burn.zeros_like(x), gen(S), ALL),
        OpSpec("rand_seeded", rand, NONE, FLOATS),
        OpSpec("randn_seeded", randn, NONE, FLOATS),
        OpSpec("randint_seeded", randint, NONE, INTS),
        OpSpec("bernoulli_seeded", bernoulli, NONE, ALL),
    ]


def _activation_rows() -> list[OpSpec]:
    def softmax(c: Ctx, x: Any) -> Any:
        return _module_fn("softmax")(x, 1)

    def log_softmax(c: Ctx, x: Any) -> Any:
        return _module_fn("log_softmax")(x, -1)

    return [
        OpSpec("softmax", softmax, gen(B3), FLOATS, tol={F16: (2e-2, 2e-2)}),
        OpSpec("log_softmax", log_softmax, gen(B3), FLOATS, tol={F16: (2e-2, 2e-2)}),
        OpSpec("gelu", lambda c, x: _module_fn("gelu")(x), gen(S), FLOATS),
        OpSpec("gelu_tanh", lambda c, x: _module_fn("gelu")(x, approximate="tanh"), gen(S), FLOATS),
        OpSpec("silu", lambda c, x: _module_fn("silu")(x), gen(S), FLOATS),
        OpSpec("softplus", lambda c, x: _module_fn("softplus")(x * 8.0), gen(S), FLOATS),
        OpSpec("mish", lambda c, x: _module_fn("mish")(x * 4.0), gen(S), FLOATS),
        OpSpec("hard_sigmoid", lambda c, x: _module_fn("hard_sigmoid")(x * 4.0), gen(S), FLOATS),
        OpSpec("leaky_relu", lambda c, x: _module_fn("leaky_relu")(x, 0.1), gen(S), FLOATS),
    ]


def _module_rows() -> list[OpSpec]:
    """Module ops (burn.nn.functional), PyTorch signatures; skipped with a reason until they exist."""
    tol = {F32: (1e-4, 1e-4), F64: (1e-9, 1e-9), F16: (3e-2, 5e-2)}
    return [
        OpSpec(
            "conv1d",
            lambda c, x, w, b: _module_fn("conv1d")(x, w, b, stride=2, padding=1),
            gen((2, 3, 9), (4, 3, 3), (4,)),
            FLOATS,
            None,
            tol,
        ),
        OpSpec(
            "conv2d",
            lambda c, x, w, b: _module_fn("conv2d")(x, w, b, padding=1, dilation=1),
            gen((2, 3, 6, 5), (4, 3, 3, 3), (4,)),
            FLOATS,
            None,
            tol,
        ),
        OpSpec(
            "conv2d_groups_stride",
            lambda c, x, w: _module_fn("conv2d")(x, w, None, stride=2, groups=2),
            gen((1, 4, 7, 7), (6, 2, 3, 3)),
            FLOATS,
            None,
            tol,
        ),
        OpSpec(
            "conv_transpose2d",
            lambda c, x, w: _module_fn("conv_transpose2d")(x, w, None, stride=2, padding=1),
            gen((1, 3, 4, 4), (3, 2, 3, 3)),
            FLOATS,
            None,
            tol,
        ),
        OpSpec(
            "max_pool2d",
            lambda c, x: _module_fn("max_pool2d")(x, 2, stride=2),
            gen((2, 3, 6, 6)),
            FLOATS,
            None,
            tol,
        ),
        OpSpec(
            "avg_pool2d",
            lambda c, x: _module_fn("avg_pool2d")(x, 3, stride=1, padding=1),
            gen((2, 3, 5, 5)),
            FLOATS,
            None,
            tol,
        ),
        OpSpec(
            "adaptive_avg_pool2d",
            lambda c, x: _module_fn("adaptive_avg_pool2d")(x, (2, 3)),
            gen((1, 2, 7, 8)),
            FLOATS,
            None,
            tol,
        ),
        OpSpec(
            "adaptive_max_pool2d",
            lambda c, x: _module_fn("adaptive_max_pool2d")(x, (3, 2), return_indices=True),
            gen((1, 2, 7, 5)),
            FLOATS,
            None,
            tol,
        ),
        OpSpec(
            "max_pool3d",
            lambda c, x: _module_fn("max_pool3d")(x, (2, 3, 2), stride=(2, 1, 2), padding=(1, 1, 0)),
            gen((1, 2, 5, 6, 5)),
            FLOATS,
            None,
            tol,
        ),
        OpSpec(
            "avg_pool3d",
            lambda c, x: _module_fn("avg_pool3d")(x, 3, stride=2, padding=1, count_include_pad=False),
            gen((1, 2, 5, 5, 6)),
            FLOATS,
            None,
            tol,
        ),
        OpSpec(
            "max_pool3d_ceil_dilation_indices",
            lambda c, x: _module_fn("max_pool3d")(
                x, 2, stride=2, dilation=(1, 2, 1), ceil_mode=True, return_indices=True
            ),
            gen((1, 2, 5, 6, 5)),
            FLOATS,
            None,
            tol,
        ),
        OpSpec(
            "avg_pool3d_ceil_include_pad",
            lambda c, x: _module_fn("avg_pool3d")(x, (2, 3, 2), stride=2, padding=(1, 1, 0), ceil_mode=True),
            gen((2, 1, 5, 6, 5)),
            FLOATS,
            None,
            tol,
        ),
        OpSpec(
            "adaptive_avg_pool3d",
            lambda c, x: _module_fn("adaptive_avg_pool3d")(x, (2, 3, None)),
            gen((1, 2, 5, 7, 3)),
            FLOATS,
            None,
            tol,
        ),
        OpSpec(
            "adaptive_max_pool3d",
            lambda c, x: _module_fn("adaptive_max_pool3d")(x, (3, 2, 2), return_indices=True),
            gen((1, 2, 5, 4, 6)),
            FLOATS,
            None,
            tol,
        ),
        OpSpec(
            "conv_weight_grad_groups_stride",
            _conv_weight_grad,
            gen((2, 4, 7, 6), (2, 6, 4, 3)),
            FLOATS,
            None,
            tol,
        ),
        OpSpec(
            "unfold4d",
            lambda c, x: _module_fn("unfold4d")(x, 3, stride=2, padding=1),
            gen((2, 3, 6, 5)),
            FLOATS,
            None,
            tol,
        ),
        OpSpec(
            "interpolate_bilinear",
            lambda c, x: _module_fn("interpolate")(x, size=(5, 7), mode="bilinear"),
            gen((1, 2, 3, 4)),
            FLOATS,
            None,
            tol,
        ),
        OpSpec(
            "embedding",
            lambda c, w, i: _module_fn("embedding")(i, w),
            lambda rng, d: [_values(rng, d, (6, 3), "normal"), rng.integers(0, 6, (2, 4))],
            FLOATS,
        ),
    ]


def _vision_rows() -> list[OpSpec]:
    from ._suite._specs_vision import rows

    return rows()


def _custom_rows() -> list[OpSpec]:
    from ._suite._specs_custom import rows

    return rows()


def _attention_rows() -> list[OpSpec]:
    from ._suite._specs_attention import rows

    return rows()


SPECS: list[OpSpec] = [
    *_unary_rows(),
    *_binary_rows(),
    *_reduction_rows(),
    *_shape_rows(),
    *_index_rows(),
    *_sort_rows(),
    *_pad_rows(),
    *_matmul_rows(),
    *_cast_rows(),
    *_creation_rows(),
    *_activation_rows(),
    *_module_rows(),
    *_vision_rows(),
    *_attention_rows(),
    *_custom_rows(),
]

_names = [s.name for s in SPECS]
assert len(_names) == len(set(_names)), "conformance spec names must be unique"
