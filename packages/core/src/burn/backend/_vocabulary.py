"""The op vocabulary: one ``OpKind`` per backend op and one ``OpDef`` row describing it.

An op kind is a ``StrEnum`` whose value is the name the backend tables already use (``"exp"``,
``"add"``, ``"sum"``, ``"conv"``), so a table keyed by the plain strings is keyed by the enumeration
too. Each row says which ``Backend`` method runs the op (element-wise and reduction kinds share one
method that takes the kind as its first argument), its family, how many tensors it takes, which dtypes
it accepts, how its result dtype follows (``result_dtype``/``result_dtypes``: comparisons, isnan/isinf
and all/any give bool, ...) and its shape rule (``out_shape``, from ``_shapes``: the one home of each
formula). ``burn.ir`` records, serialises and replays ops by these rows; the frontend, capture, fusion,
the backends, export and remote execution ask them instead of repeating the rules.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from enum import StrEnum

from .._dtype import ALL_DTYPES, DType, bool_, float32, float64, int32, int64
from .._errors import DTypeError
from ._optable import (
    ACTIVATION_OPS,
    ARG_REDUCE_OPS,
    BINARY_OPS,
    COMPARISON_OPS,
    REDUCE_OPS,
    UNARY_BOOL_RESULT,
    UNARY_OPS,
)
from ._shapes import OUTPUT_SHAPES, SHAPE_RULES

# families
CREATION, ELEMENTWISE, REDUCE, LAYOUT, INDEX, LINALG, MODULE, RANDOM, SORT = (
    "creation",
    "elementwise",
    "reduce",
    "layout",
    "index",
    "linalg",
    "module",
    "random",
    "sort",
)

# method -> (family, tensor arity (-1: a sequence), accepted dtypes, result dtype rule, output count)
# dtype rules: "same" (the first tensor's), "bool", "int" (the backend's default int), "attr" (a dtype
# argument), "pair" (values keep the dtype, indices are default int), "lse" (values keep the dtype, the
# second result is float32: attention's row log-sum-exp), "custom" (the registered op's dtype rule)
_METHODS: dict[str, tuple[str, int, str, str, int]] = {
    "from_numpy": (CREATION, 0, "any", "attr", 1),
    "full": (CREATION, 0, "any", "attr", 1),
    "arange": (CREATION, 0, "num", "attr", 1),
    "cast": (ELEMENTWISE, 1, "any", "attr", 1),
    "where": (ELEMENTWISE, 3, "any", "value", 1),
    "clamp": (ELEMENTWISE, 1, "num", "same", 1),
    "leaky_relu": (ELEMENTWISE, 1, "float", "same", 1),
    "var": (REDUCE, 1, "float", "same", 1),
    "matmul": (LINALG, 2, "num", "same", 1),
    "reshape": (LAYOUT, 1, "any", "same", 1),
    "permute": (LAYOUT, 1, "any", "same", 1),
    "expand": (LAYOUT, 1, "any", "same", 1),
    "slice": (LAYOUT, 1, "any", "same", 1),
    "slice_assign": (LAYOUT, 2, "any", "same", 1),
    "cat": (LAYOUT, -1, "any", "same", 1),
    "stack": (LAYOUT, -1, "any", "same", 1),
    "flip": (LAYOUT, 1, "any", "same", 1),
    "repeat": (LAYOUT, 1, "any", "same", 1),
    "pad": (LAYOUT, 1, "any", "same", 1),
    "tril": (LAYOUT, 1, "any", "same", 1),
    "triu": (LAYOUT, 1, "any", "same", 1),
    "gather": (INDEX, 2, "any", "same", 1),
    "scatter_add": (INDEX, 3, "num", "same", 1),
    "select": (INDEX, 2, "any", "same", 1),
    "select_add": (INDEX, 3, "num", "same", 1),
    "check_index": (INDEX, 1, "int", "same", 1),
    "mask_fill": (INDEX, 2, "any", "same", 1),
    "one_hot": (INDEX, 1, "int", "attr", 1),
    "embedding": (INDEX, 2, "any", "same", 1),
    "sort": (SORT, 1, "num", "pair", 2),
    "argsort": (SORT, 1, "num", "int", 1),
    "topk": (SORT, 1, "num", "pair", 2),
    "cumsum": (REDUCE, 1, "num", "same", 1),
    "cumprod": (REDUCE, 1, "num", "same", 1),
    "softmax": (ELEMENTWISE, 1, "float", "same", 1),
    "log_softmax": (ELEMENTWISE, 1, "float", "same", 1),
    "conv": (MODULE, 3, "float", "same", 1),
    "conv_transpose": (MODULE, 3, "float", "same", 1),
    "unfold4d": (MODULE, 1, "float", "same", 1),
    "conv_weight_grad": (MODULE, 2, "float", "same", 1),
    "max_pool": (MODULE, 1, "num", "pair", 2),
    "avg_pool": (MODULE, 1, "float", "same", 1),
    "adaptive_avg_pool": (MODULE, 1, "float", "same", 1),
    "adaptive_max_pool": (MODULE, 1, "num", "pair", 2),
    "interpolate": (MODULE, 1, "float", "same", 1),
    "attention": (MODULE, 4, "float", "lse", 2),
    "attention_backward": (MODULE, 7, "float", "same", 3),
    "deform_conv2d": (MODULE, 5, "float", "same", 1),
    "roi_align": (MODULE, 2, "float", "same", 1),
    "nms": (INDEX, 2, "float", "bool", 1),
    "quantize": (ELEMENTWISE, 3, "float", "attr", 1),
    "dequantize": (ELEMENTWISE, 3, "int", "attr", 1),
    "quantized_matmul": (LINALG, 2, "int", "int", 1),
    "random_uniform": (RANDOM, 0, "float", "attr", 1),
    "random_normal": (RANDOM, 0, "float", "attr", 1),
    "random_int": (RANDOM, 0, "int", "attr", 1),
    "random_bernoulli": (RANDOM, 0, "any", "attr", 1),
    # a user's op (``burn.custom``): custom(name, tensors, attrs); its registered row gives the result
    "custom": (MODULE, -1, "any", "custom", 1),
}

OpKind = StrEnum(  # type: ignore[misc]
    "OpKind",
    {name.upper(): name for name in [*UNARY_OPS, *BINARY_OPS, *REDUCE_OPS, *ARG_REDUCE_OPS, *_METHODS]},
)
OpKind.__doc__ = "Every op a backend runs, by the name the backend tables use (``OpKind.EXP == 'exp'``)."


@dataclass(frozen=True)
class OpDef:
    """One op of the vocabulary.

    ``method``: the ``Backend`` method that runs it; ``op_arg``: whether the kind's name is that
    method's first argument (``unary("exp", x)``). ``family``: creation, elementwise, reduce, layout,
    index, linalg, module, random or sort. ``arity``: tensor inputs (-1: a sequence of tensors).
    ``accepts``: "float", "num" (ints and floats), "int" (ints and bool) or "any". ``result``: "same",
    "bool", "int" (the backend's default int), "attr" (from a dtype argument), "value" (the value
    operands'), "pair" (values keep the dtype, indices are default int), "lse" (values keep the
    dtype, the second result is float32) or "custom" (a ``burn.custom`` op's own dtype rule, which
    ``burn.ir``'s ``result_types`` asks). ``outputs``: result count.
    ``differentiable``: a gradient flows through it (False for bool/int results, creation, random).
    ``shape_rule``: the result's shape from the call's arguments (``out_shape``).

    >>> row = burn.backend.op_def("lt")
    >>> row.family, row.result, row.out_shape((2, 1), (3,))
    ('elementwise', 'bool', (2, 3))
    """

    kind: OpKind
    method: str
    op_arg: bool
    family: str
    arity: int
    accepts: str
    result: str
    outputs: int = 1
    differentiable: bool = True
    bool_operands: str = "int"  # a "num" op's bool operands: cast to the default "int", "keep", "error"
    cast_to_bool: bool = False  # all/any: operands of any dtype become bool first
    shape_rule: Callable[..., tuple[int, ...]] = field(
        default=SHAPE_RULES["unary"], repr=False, compare=False
    )

    def operand_dtype(self, dt: DType, default_float: DType, default_int: DType) -> DType:
        """The dtype the op computes in for operands of dtype ``dt``: the frontend casts them to it
        (ints to the default float for float ops, bools to the default int for arithmetic), or a
        ``DTypeError`` naming the op when it does not take ``dt``."""
        if self.cast_to_bool:
            return bool_
        if self.accepts == "float":
            return dt if dt.is_float else default_float
        if self.accepts == "num" and dt.is_bool:
            if self.bool_operands == "keep":
                return dt
            if self.bool_operands == "error":
                raise DTypeError(
                    f"{self.kind}: expected a numeric tensor, got bool (cast it with .int() or .float())"
                )
            return default_int
        if self.accepts == "int" and dt.is_float:
            what = "a bool or integer tensor" if self.arity == 1 else "bool or integer tensors"
            raise DTypeError(f"{self.kind}: expected {what}, got {dt.name}")
        return dt

    @property
    def bool_result(self) -> bool:
        """The result is bool whatever the operands: comparisons, isnan/isinf, all/any, nms.

        >>> burn.backend.op_def("eq").bool_result, burn.backend.op_def("add").bool_result
        (True, False)
        """
        return self.result == "bool"

    def result_dtype(self, operand: DType) -> DType:
        """The result dtype of an element-wise op or a reduction whose operands are (already cast to)
        ``operand``: bool where ``bool_result``, else ``operand``.

        >>> burn.backend.op_def("gt").result_dtype(burn.float32)
        burn.bool
        """
        return bool_ if self.result == "bool" else operand

    def result_dtypes(
        self, operand: DType | None, default_int: DType, attr: DType | None = None
    ) -> tuple[DType | None, ...]:
        """The dtype of each result: ``operand`` is the dtype the op computes in (for ``where``, the
        value operands'), ``default_int`` the backend's, ``attr`` the call's dtype argument; None where
        the arguments do not give one.

        >>> burn.backend.op_def("max_pool").result_dtypes(burn.float32, burn.int64)
        (burn.float32, burn.int64)
        """
        rule = self.result
        if rule == "pair":
            return (operand, default_int)
        if rule == "lse":
            return (operand, float32)
        if rule == "bool":
            return (bool_,)
        if rule == "int":
            return (default_int,)
        if rule == "attr":
            return (attr,)
        return (operand,) * self.outputs  # "same", "value"

    def out_shape(self, *args: object) -> tuple[int, ...]:
        """The result's shape (both results' for two-output ops) from the call's arguments after the op
        kind, tensors given as their shapes.

        >>> burn.backend.op_def("sum").out_shape((2, 3, 4), (1,), False)
        (2, 4)
        """
        return self.shape_rule(*args)

    def out_shapes(self, *args: object) -> tuple[tuple[int, ...], ...]:
        """The shape of each result from the call's arguments (as ``out_shape``): the results of
        ``attention`` and ``attention_backward`` differ in shape, the others share one.

        >>> burn.backend.op_def("attention").out_shapes((2, 4, 5, 8), (2, 4, 7, 8), (2, 4, 7, 3), None, False, 0.5)
        ((2, 4, 5, 3), (2, 4, 5))
        """
        rule = OUTPUT_SHAPES.get(self.method)
        if rule is not None:
            return rule(*args)
        return (self.shape_rule(*args),) * self.outputs

    @property
    def as_is(self) -> frozenset[DType]:
        """The operand dtypes the op takes without a cast (the frontend's fast path)."""
        return _AS_IS[self.kind]

    def __post_init__(self) -> None:
        # no gradient flows through bool/int results, host data, random draws or index checks
        nondiff = self.result in ("bool", "int") or self.family in (CREATION, RANDOM) or self.accepts == "int"
        # attention_backward: gradients of gradients through attention are not supported
        nondiff = nondiff or self.kind in (
            "argsort",
            "one_hot",
            "check_index",
            "quantize",
            "attention_backward",
        )
        if nondiff:
            object.__setattr__(self, "differentiable", False)

    @property
    def elementwise(self) -> bool:
        return self.family == ELEMENTWISE


def _rows() -> dict[OpKind, OpDef]:
    rows: dict[OpKind, OpDef] = {}
    for name, accepts in UNARY_OPS.items():
        result = "bool" if name in UNARY_BOOL_RESULT else "same"
        method = "activation" if name in ACTIVATION_OPS else "unary"
        rows[OpKind(name)] = OpDef(
            OpKind(name),
            method,
            True,
            ELEMENTWISE,
            1,
            accepts,
            result,
            bool_operands="error",
            shape_rule=SHAPE_RULES[method],
        )
    for name, accepts in BINARY_OPS.items():
        result = "bool" if name in COMPARISON_OPS else "same"
        on_bool = "keep" if name in ("maximum", "minimum", "mul") else "int"  # or / and on bools
        rows[OpKind(name)] = OpDef(
            OpKind(name),
            "binary",
            True,
            ELEMENTWISE,
            2,
            accepts,
            result,
            bool_operands=on_bool,
            shape_rule=SHAPE_RULES["binary"],
        )
    for name, accepts in REDUCE_OPS.items():
        any_all = name in ("all", "any")
        on_bool = "keep" if name in ("max", "min") else "int"
        rows[OpKind(name)] = OpDef(
            OpKind(name),
            "reduce",
            True,
            REDUCE,
            1,
            accepts,
            "bool" if any_all else "same",
            bool_operands=on_bool,
            cast_to_bool=any_all,
            shape_rule=SHAPE_RULES["reduce"],
        )
    for name in ARG_REDUCE_OPS:
        rows[OpKind(name)] = OpDef(
            OpKind(name), "arg_reduce", True, REDUCE, 1, "num", "int", shape_rule=SHAPE_RULES["arg_reduce"]
        )
    for name, (family, arity, accepts, result, outputs) in _METHODS.items():
        rows[OpKind(name)] = OpDef(
            OpKind(name), name, False, family, arity, accepts, result, outputs, shape_rule=SHAPE_RULES[name]
        )
    return rows


OPS: dict[OpKind, OpDef] = _rows()
ROWS: dict[str, OpDef] = {str(k): d for k, d in OPS.items()}  # by plain name: the frontend's hot lookups
# element-wise ops whose result is bool whatever their operands (comparisons, isnan, isinf), read off
# the rows once: fusion and the generated kernels test membership on their per-op paths
ELEMENTWISE_BOOL_RESULT: frozenset[str] = frozenset(
    str(k) for k, d in OPS.items() if d.bool_result and d.method in ("unary", "binary")
)


def _as_is(d: OpDef) -> frozenset[DType]:
    if d.cast_to_bool:
        return frozenset({bool_})
    taken = set()
    for dt in ALL_DTYPES:
        try:
            if d.operand_dtype(dt, float32, int64) is dt and d.operand_dtype(dt, float64, int32) is dt:
                taken.add(dt)
        except DTypeError:
            pass
    return frozenset(taken)


_AS_IS: dict[OpKind, frozenset[DType]] = {k: _as_is(d) for k, d in OPS.items()}


def op_def(kind: str) -> OpDef:
    """The row of ``kind`` (an ``OpKind`` or its name): the op's dtype and shape rules, for backends and
    tools that must not repeat them; ``KeyError`` naming it when unknown.

    >>> row = burn.backend.op_def("matmul")
    >>> row.out_shape((5, 2, 3), (3, 4)), row.result_dtype(burn.float32)
    ((5, 2, 4), burn.float32)
    """
    row = ROWS.get(kind) if isinstance(kind, str) else None
    if row is None:
        raise KeyError(f"unknown op kind {kind!r}")
    return row
