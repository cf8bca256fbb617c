"""Backward rules of the element-wise ops: the unary and binary tables, where, clamp, mask_fill,
leaky_relu, float casts and the softmax pair. Every one is memory-bound: balanced checkpointing
recomputes it instead of keeping its values."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING

from burn.backend import ACTIVATION_OPS

from ._rule import OUT, Backward, Ctx, Grads, Prim, Rule, masked, zeros

if TYPE_CHECKING:
    from burn.backend import Backend

# derivative(B, g, v) -> g times d(op)/dx, where v is the input or the output (as the table says)
Derivative = Callable[["Backend", Prim, Prim], Prim]

_SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)


def _u(B: Backend, op: str, x: Prim) -> Prim:
    return B.activation(op, x) if op in ACTIVATION_OPS else B.unary(op, x)


def _b(B: Backend, op: str, a: Prim | float, b: Prim | float) -> Prim:
    return B.binary(op, a, b)


def _mul(B: Backend, a: Prim | float, b: Prim | float) -> Prim:
    return B.binary("mul", a, b)


# ---------------------------------------------------------------- unary: d(op)/dx times g
# Each entry: (what the derivative reads: "in" or "out" or "", derivative(B, g, v) where v is that value).
def _sigmoid_of(B: Backend, x: Prim) -> Prim:
    return B.activation("sigmoid", x)


def _gelu_d(B: Backend, g: Prim, x: Prim) -> Prim:
    cdf = _b(B, "mul", _b(B, "add", _u(B, "erf", _mul(B, x, 1.0 / math.sqrt(2.0))), 1.0), 0.5)
    pdf = _mul(B, _u(B, "exp", _mul(B, _mul(B, x, x), -0.5)), _INV_SQRT_2PI)
    return _mul(B, g, _b(B, "add", cdf, _mul(B, x, pdf)))


def _gelu_tanh_d(B: Backend, g: Prim, x: Prim) -> Prim:
    x2 = _mul(B, x, x)
    inner = _mul(B, _b(B, "add", x, _mul(B, _mul(B, x2, x), 0.044715)), _SQRT_2_OVER_PI)
    t = _u(B, "tanh", inner)
    dinner = _mul(B, _b(B, "add", _mul(B, x2, 3 * 0.044715), 1.0), _SQRT_2_OVER_PI)
    sech2 = _b(B, "sub", 1.0, _mul(B, t, t))
    d = _b(B, "add", _mul(B, _b(B, "add", t, 1.0), 0.5), _mul(B, _mul(B, _mul(B, x, 0.5), sech2), dinner))
    return _mul(B, g, d)


def _silu_d(B: Backend, g: Prim, x: Prim) -> Prim:
    s = _sigmoid_of(B, x)
    return _mul(B, g, _mul(B, s, _b(B, "add", _mul(B, x, _b(B, "sub", 1.0, s)), 1.0)))


def _mish_d(B: Backend, g: Prim, x: Prim) -> Prim:
    t = _u(B, "tanh", _u(B, "softplus", x))
    d = _b(B, "add", t, _mul(B, _mul(B, x, _b(B, "sub", 1.0, _mul(B, t, t))), _sigmoid_of(B, x)))
    return _mul(B, g, d)


def _hard_sigmoid_d(B: Backend, g: Prim, x: Prim) -> Prim:
    inside = B.binary("and", B.binary("gt", x, -3.0), B.binary("lt", x, 3.0))
    return masked(B, _mul(B, g, 1.0 / 6.0), inside)


def _zero_d(B: Backend, g: Prim, _v: Prim) -> Prim:
    return zeros(B, B.shape_of(g), g)


_UNARY: dict[str, tuple[str, Derivative]] = {
    "neg": ("", lambda B, g, v: _u(B, "neg", g)),
    "abs": ("in", lambda B, g, x: _mul(B, g, _u(B, "sign", x))),
    "square": ("in", lambda B, g, x: _mul(B, g, _mul(B, x, 2.0))),
    "exp": ("out", lambda B, g, y: _mul(B, g, y)),
    "expm1": ("out", lambda B, g, y: _mul(B, g, _b(B, "add", y, 1.0))),
    "log": ("in", lambda B, g, x: _b(B, "div", g, x)),
    "log1p": ("in", lambda B, g, x: _b(B, "div", g, _b(B, "add", x, 1.0))),
    "sqrt": ("out", lambda B, g, y: _b(B, "div", _mul(B, g, 0.5), y)),
    "rsqrt": ("out", lambda B, g, y: _mul(B, g, _mul(B, _mul(B, _mul(B, y, y), y), -0.5))),
    "sin": ("in", lambda B, g, x: _mul(B, g, _u(B, "cos", x))),
    "cos": ("in", lambda B, g, x: _mul(B, g, _u(B, "neg", _u(B, "sin", x)))),
    "tan": ("out", lambda B, g, y: _mul(B, g, _b(B, "add", _mul(B, y, y), 1.0))),
    "asin": ("in", lambda B, g, x: _mul(B, g, _u(B, "rsqrt", _b(B, "sub", 1.0, _mul(B, x, x))))),
    "acos": (
        "in",
        lambda B, g, x: _mul(B, _u(B, "neg", g), _u(B, "rsqrt", _b(B, "sub", 1.0, _mul(B, x, x)))),
    ),
    "atan": ("in", lambda B, g, x: _b(B, "div", g, _b(B, "add", _mul(B, x, x), 1.0))),
    "sinh": ("in", lambda B, g, x: _mul(B, g, _u(B, "cosh", x))),
    "cosh": ("in", lambda B, g, x: _mul(B, g, _u(B, "sinh", x))),
    "tanh": ("out", lambda B, g, y: _mul(B, g, _b(B, "sub", 1.0, _mul(B, y, y)))),
    "erf": (
        "in",
        lambda B, g, x: _mul(
            B, g, _mul(B, _u(B, "exp", _u(B, "neg", _mul(B, x, x))), 2.0 / math.sqrt(math.pi))
        ),
    ),
    "reciprocal": ("out", lambda B, g, y: _mul(B, _u(B, "neg", g), _mul(B, y, y))),
    "relu": ("out", lambda B, g, y: masked(B, g, B.binary("gt", y, 0))),
    "sigmoid": ("out", lambda B, g, y: _mul(B, g, _mul(B, y, _b(B, "sub", 1.0, y)))),
    "gelu": ("in", _gelu_d),
    "gelu_tanh": ("in", _gelu_tanh_d),
    "silu": ("in", _silu_d),
    "softplus": ("in", lambda B, g, x: _mul(B, g, _sigmoid_of(B, x))),
    "mish": ("in", _mish_d),
    "hard_sigmoid": ("in", _hard_sigmoid_d),
    # piecewise constant: the gradient is zero almost everywhere (as in PyTorch and Burn)
    "sign": ("", _zero_d),
    "floor": ("", _zero_d),
    "ceil": ("", _zero_d),
    "round": ("", _zero_d),
    "trunc": ("", _zero_d),
}

# ops without a gradient at all (bool results): they return untracked tensors
UNARY_UNTRACKED = frozenset({"isnan", "isinf", "not"})


def _unary_rule(op: str, reads: str, d: Derivative) -> Rule:
    if reads == "in":

        def backward(B: Backend, g: Prim, c: Ctx) -> Grads:
            return (d(B, g, c.x(0)),)
    elif reads == "out":

        def backward(B: Backend, g: Prim, c: Ctx) -> Grads:
            return (d(B, g, c.out()),)
    else:

        def backward(B: Backend, g: Prim, c: Ctx) -> Grads:
            return (d(B, g, None),)

    return Rule(f"unary:{op}", _u, backward, save_in=(0,) if reads == "in" else (), save_out=reads == "out")


# ---------------------------------------------------------------- binary
def _add_b(B: Backend, g: Prim, c: Ctx) -> Grads:
    return g, g


def _sub_b(B: Backend, g: Prim, c: Ctx) -> Grads:
    return g, (_u(B, "neg", g) if c.needs(1) else None)


def _mul_b(B: Backend, g: Prim, c: Ctx) -> Grads:
    return (_mul(B, g, c.x(1)) if c.needs(0) else None, _mul(B, g, c.x(0)) if c.needs(1) else None)


def _div_b(B: Backend, g: Prim, c: Ctx) -> Grads:
    b = c.x(1)
    ga = _b(B, "div", g, b) if c.needs(0) else None
    gb = None
    if c.needs(1):
        gb = _u(B, "neg", _b(B, "div", _mul(B, g, c.x(0)), _mul(B, b, b)))
    return ga, gb


def _pow_b(B: Backend, g: Prim, c: Ctx) -> Grads:
    a, b = c.x(0), c.x(1)
    ga = gb = None
    if c.needs(0):
        bm1 = b - 1.0 if isinstance(b, (int, float)) else _b(B, "sub", b, 1.0)
        ga = _mul(B, g, _mul(B, _b(B, "pow", a, bm1), b))
    if c.needs(1):
        log_a = math.log(a) if isinstance(a, (int, float)) else _u(B, "log", a)
        gb = _mul(B, _mul(B, g, c.out()), log_a)
    return ga, gb


def _pick(B: Backend, g: Prim, win: Prim, tie: Prim) -> Prim:
    """g where ``win``, g/2 on ties (the subgradient PyTorch uses), else 0."""
    return _b(B, "add", masked(B, g, win), masked(B, _mul(B, g, 0.5), tie))


def _max_min_b(cmp: str) -> Backward:
    def backward(B: Backend, g: Prim, c: Ctx) -> Grads:
        a, b = c.x(0), c.x(1)
        tie = B.binary("eq", a, b)
        ga = _pick(B, g, B.binary(cmp, a, b), tie) if c.needs(0) else None
        gb = _pick(B, g, B.binary(cmp, b, a), tie) if c.needs(1) else None
        return ga, gb

    return backward


def _square(B: Backend, v: Prim | float) -> Prim | float:
    return v * v if isinstance(v, (int, float)) else _mul(B, v, v)


def _atan2_b(B: Backend, g: Prim, c: Ctx) -> Grads:
    a, b = c.x(0), c.x(1)
    den = _b(B, "add", _square(B, a), _square(B, b))
    ga = _b(B, "div", _mul(B, g, b), den) if c.needs(0) else None
    gb = _u(B, "neg", _b(B, "div", _mul(B, g, a), den)) if c.needs(1) else None
    return ga, gb


def _mod_b(rounding: str) -> Backward:
    # a mod b = a - rounding(a / b) * b
    def backward(B: Backend, g: Prim, c: Ctx) -> Grads:
        gb = None
        if c.needs(1):
            a, b = c.x(0), c.x(1)
            q = _u(B, rounding, _b(B, "div", a, b))
            gb = _u(B, "neg", _mul(B, g, q))
        return g, gb

    return backward


def _floor_div_b(B: Backend, g: Prim, c: Ctx) -> Grads:
    return (
        zeros(B, c.in_shape(0), g) if c.needs(0) else None,
        zeros(B, c.in_shape(1), g) if c.needs(1) else None,
    )


# (op, per input: what its gradient reads, backward): an untracked operand's partner is not kept
_BOTH = ((0, 1), (0, 1))
_BINARY = [
    ("add", ((), ()), _add_b),
    ("sub", ((), ()), _sub_b),
    ("mul", ((1,), (0,)), _mul_b),
    ("div", ((1,), (0, 1)), _div_b),
    ("pow", ((0, 1), (0, OUT)), _pow_b),
    ("maximum", _BOTH, _max_min_b("gt")),
    ("minimum", _BOTH, _max_min_b("lt")),
    ("atan2", _BOTH, _atan2_b),
    ("remainder", ((), (0, 1)), _mod_b("floor")),
    ("fmod", ((), (0, 1)), _mod_b("trunc")),
    ("floor_div", ((), ()), _floor_div_b),
]


# ---------------------------------------------------------------- where, clamp, mask_fill, ...
def _where_b(B: Backend, g: Prim, c: Ctx) -> Grads:
    taken = masked(B, g, c.x(0))
    return None, (taken if c.needs(1) else None), (_b(B, "sub", g, taken) if c.needs(2) else None)


def _clamp_b(B: Backend, g: Prim, c: Ctx) -> Grads:
    x = c.x(0)
    lo, hi = c.meta
    keep = None
    if lo is not None:
        keep = B.binary("ge", x, lo)
    if hi is not None:
        le = B.binary("le", x, hi)
        keep = le if keep is None else B.binary("and", keep, le)
    return (masked(B, g, keep),)


def _mask_fill_b(B: Backend, g: Prim, c: Ctx) -> Grads:
    return _b(B, "sub", g, masked(B, g, c.x(1))), None


def _leaky_relu_b(B: Backend, g: Prim, c: Ctx) -> Grads:
    return (B.where(B.binary("ge", c.x(0), 0), g, _mul(B, g, c.meta)),)


def _cast_b(B: Backend, g: Prim, c: Ctx) -> Grads:
    _dtype, src = c.meta
    return (B.cast(g, src),)


def _softmax_b(B: Backend, g: Prim, c: Ctx) -> Grads:
    y, dim = c.out(), c.meta
    dot = B.reduce("sum", _mul(B, g, y), (dim,), True)
    return (_mul(B, y, _b(B, "sub", g, dot)),)


def _log_softmax_b(B: Backend, g: Prim, c: Ctx) -> Grads:
    y, dim = c.out(), c.meta
    total = B.reduce("sum", g, (dim,), True)
    return (_b(B, "sub", g, _mul(B, _u(B, "exp", y), total)),)


ROWS = (
    [_unary_rule(op, reads, d) for op, (reads, d) in _UNARY.items()]
    + [Rule(f"binary:{op}", _b, bw, save_for=reads) for op, reads, bw in _BINARY]
    + [
        Rule("where", lambda B, _m, cond, a, b: B.where(cond, a, b), _where_b, save_in=(0,)),
        Rule("clamp", lambda B, m, x: B.clamp(x, m[0], m[1]), _clamp_b, save_in=(0,)),
        Rule("mask_fill", lambda B, v, x, mask: B.mask_fill(x, mask, v), _mask_fill_b, save_in=(1,)),
        Rule("leaky_relu", lambda B, s, x: B.leaky_relu(x, s), _leaky_relu_b, save_in=(0,)),
        Rule("cast", lambda B, m, x: B.cast(x, m[0]), _cast_b),
        Rule("softmax", lambda B, d, x: B.softmax(x, d), _softmax_b, save_out=True),
        Rule("log_softmax", lambda B, d, x: B.log_softmax(x, d), _log_softmax_b, save_out=True),
    ]
)
