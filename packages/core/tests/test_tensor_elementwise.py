"""Element-wise ops of burn.Tensor against numpy (the independent reference): unary functions,
operators with tensors and Python scalars on both sides, remainder/fmod sign rules, comparisons,
bitwise ops, clamp, and the errors bad operands raise."""

from __future__ import annotations

import contextlib
import math
import operator

import burn
import numpy as np
import pytest

RNG = np.random.default_rng(1234)
A = RNG.standard_normal((3, 4)).astype(np.float32)
B = RNG.standard_normal((3, 4)).astype(np.float32)
POS = (np.abs(A) + 0.1).astype(np.float32)


def t(a):
    return burn.from_numpy(np.asarray(a))


def close(x, ref, rtol=1e-6, atol=1e-6):
    assert isinstance(x, burn.Tensor)
    got = x.numpy()
    ref = np.asarray(ref)
    assert got.shape == ref.shape, (got.shape, ref.shape)
    np.testing.assert_allclose(got, ref, rtol=rtol, atol=atol)


def _erf(x):
    return np.vectorize(math.erf)(x.astype(np.float64))


UNARY = {
    "abs": (np.abs, A),
    "neg": (np.negative, A),
    "exp": (np.exp, A),
    "expm1": (np.expm1, A),
    "log": (np.log, POS),
    "log1p": (np.log1p, POS),
    "sqrt": (np.sqrt, POS),
    "rsqrt": (lambda x: 1 / np.sqrt(x), POS),
    "square": (np.square, A),
    "sin": (np.sin, A),
    "cos": (np.cos, A),
    "tan": (np.tan, A),
    "asin": (np.arcsin, np.clip(A, -0.9, 0.9)),
    "acos": (np.arccos, np.clip(A, -0.9, 0.9)),
    "atan": (np.arctan, A),
    "sinh": (np.sinh, A),
    "cosh": (np.cosh, A),
    "tanh": (np.tanh, A),
    "sigmoid": (lambda x: 1 / (1 + np.exp(-x.astype(np.float64))), A),
    "relu": (lambda x: np.maximum(x, 0), A),
    "erf": (_erf, A),
    "floor": (np.floor, A * 3),
    "ceil": (np.ceil, A * 3),
    "round": (np.round, np.array([0.5, 1.5, 2.5, -0.5, -1.5, 0.49], np.float32)),
    "trunc": (np.trunc, A * 3),
    "sign": (np.sign, np.array([-2.0, 0.0, 3.0], np.float32)),
    "reciprocal": (np.reciprocal, POS),
}


@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_against_numpy(name):
    ref, data = UNARY[name]
    out = getattr(t(data), name)()
    assert out.dtype is burn.float32
    close(out, ref(data), rtol=2e-6, atol=2e-6)


def test_unary_float_ops_on_ints_compute_in_default_float():
    x = burn.tensor([1, 4, 9])
    out = x.sqrt()
    assert out.dtype is burn.float32
    close(out, [1.0, 2.0, 3.0])
    assert x.floor() is x and x.round() is x  # rounding ints is the identity


def test_isnan_isinf():
    x = t(np.array([1.0, np.nan, np.inf, -np.inf], np.float32))
    assert x.isnan().tolist() == [False, True, False, False]
    assert x.isinf().tolist() == [False, False, True, True]
    assert x.isnan().dtype is burn.bool
    assert burn.tensor([1, 2]).isnan().tolist() == [False, False]


def test_unary_dtype_errors_name_op_and_dtype():
    with pytest.raises(burn.DTypeError, match=r"neg: expected a numeric tensor, got bool"):
        -burn.tensor([True])
    with pytest.raises(burn.DTypeError, match=r"not: expected a bool or integer tensor, got float32"):
        ~burn.tensor([1.0])


def _nan_powers_expected(sym, base):
    """``base ** fractional`` with a negative base is NaN on purpose (as in numpy); numpy's "invalid value
    encountered in power" RuntimeWarning is then expected, not hidden."""
    if sym == "**" and np.any(np.asarray(base) < 0):
        return pytest.warns(RuntimeWarning, match="invalid value encountered in power")
    return contextlib.nullcontext()


BINOPS = {
    "+": operator.add,
    "-": operator.sub,
    "*": operator.mul,
    "/": operator.truediv,
    "//": operator.floordiv,
    "%": operator.mod,
    "**": operator.pow,
}


@pytest.mark.parametrize("sym", sorted(BINOPS))
def test_binary_operators_tensor_tensor_broadcast(sym):
    fn = BINOPS[sym]
    a = POS if sym == "**" else A
    b = B[:1] if sym != "**" else B[:1].round()  # (1, 4) broadcasts against (3, 4)
    if sym in ("/", "//", "%"):
        b = np.where(np.abs(b) < 0.2, 0.5, b).astype(np.float32)
    close(fn(t(a), t(b)), fn(a, b), rtol=1e-5, atol=1e-5)
    with _nan_powers_expected(sym, b):
        close(fn(t(b), t(a)), fn(b, a), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("sym", sorted(BINOPS))
@pytest.mark.parametrize("scalar", [3, 2.5, -1.5])
def test_binary_operators_with_scalars_on_both_sides(sym, scalar):
    fn = BINOPS[sym]
    a = POS
    close(fn(t(a), scalar), fn(a, np.float32(scalar)), rtol=1e-5, atol=1e-5)
    with _nan_powers_expected(sym, scalar):
        close(fn(scalar, t(a)), fn(np.float32(scalar), a), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("sym", ["+", "-", "*", "//", "%"])
def test_int_operators_match_python(sym):
    fn = BINOPS[sym]
    xs = [-7, -3, 0, 3, 7]
    ys = [2, -2, 3, -3, 5]
    out = fn(burn.tensor(xs), burn.tensor(ys))
    assert out.dtype is burn.int64
    assert out.tolist() == [fn(x, y) for x, y in zip(xs, ys)]
    assert fn(burn.tensor(xs), 3).tolist() == [fn(x, 3) for x in xs]
    assert fn(10, burn.tensor(ys)).tolist() == [fn(10, y) for y in ys]


def test_true_division_of_ints_gives_float():
    out = burn.tensor([1, 2, 3]) / burn.tensor([2, 2, 2])
    assert out.dtype is burn.float32
    close(out, [0.5, 1.0, 1.5])
    assert (burn.tensor([1, 2]) / 4).dtype is burn.float32
    close(3 / burn.tensor([1, 2]), [3.0, 1.5])
    assert burn.tensor([1, 2]).div(2).tolist() == [0.5, 1.0]


def test_remainder_follows_python_and_fmod_follows_c():
    xs = np.array([-3.0, 3.0, -3.5, 3.5], np.float32)
    for d in (2.0, -2.0):
        assert t(xs).remainder(d).tolist() == [x % d for x in xs.tolist()]
        assert (t(xs) % d).tolist() == [x % d for x in xs.tolist()]
        assert t(xs).fmod(d).tolist() == [math.fmod(x, d) for x in xs.tolist()]
    ints = burn.tensor([-3, 3, -4])
    assert ints.remainder(2).tolist() == [1, 1, 0]
    assert ints.fmod(2).tolist() == [-1, 1, 0]
    assert ints.remainder(-2).tolist() == [-1, -1, 0]
    assert ints.fmod(-2).tolist() == [-1, 1, 0]


def test_pow_variants():
    close(t(POS).pow(t(B)), np.power(POS, B), rtol=1e-5)
    assert (burn.tensor([2, 3]) ** 2).tolist() == [4, 9]
    assert (2 ** burn.tensor([2, 3])).tolist() == [4, 8]
    close(burn.tensor([4, 9]) ** 0.5, [2.0, 3.0])
    with pytest.raises(ValueError, match=r"pow: negative exponent -1 on an integer tensor \(int64\)"):
        burn.tensor([2, 3]) ** -1


COMPARISONS = {
    "==": operator.eq,
    "!=": operator.ne,
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
}


@pytest.mark.parametrize("sym", sorted(COMPARISONS))
def test_comparisons(sym):
    fn = COMPARISONS[sym]
    a = np.array([1.0, 2.0, 3.0], np.float32)
    b = np.array([3.0, 2.0, 1.0], np.float32)
    out = fn(t(a), t(b))
    assert out.dtype is burn.bool
    assert out.tolist() == fn(a, b).tolist()
    assert fn(t(a), 2).tolist() == fn(a, 2).tolist()
    assert fn(2, t(a)).tolist() == fn(2, a).tolist()
    assert fn(burn.tensor([1, 2, 3]), 2.5).tolist() == fn(np.array([1, 2, 3]), 2.5).tolist()


def test_named_comparisons_and_burn_aliases():
    x, y = burn.tensor([1, 2, 3]), burn.tensor([2, 2, 2])
    assert x.lt(y).tolist() == [True, False, False]
    assert x.greater_equal(y).tolist() == [False, True, True]
    assert x.equal(y).tolist() == [False, True, False]
    assert x.not_equal(2).tolist() == [True, False, True]


def test_comparison_with_out_of_range_scalar_and_arithmetic_overflow_error():
    x = burn.tensor([1, 100], dtype=burn.int8)
    assert (x < 300).tolist() == [True, True]
    assert (x == 1000).tolist() == [False, False]
    with pytest.raises(
        ValueError,
        match=r"add: scalar 300 is out of range for the tensor's dtype int8 \(expected -128..127\)",
    ):
        x + 300


def test_bool_tensor_compared_with_int_is_numeric():
    m = burn.tensor([True, False])
    assert (m == 1).tolist() == [True, False]
    assert (m == 2).tolist() == [False, False]


def test_bitwise_and_logical():
    a, b = burn.tensor([True, True, False]), burn.tensor([True, False, False])
    assert (a & b).tolist() == [True, False, False]
    assert (a | b).tolist() == [True, True, False]
    assert (a ^ b).tolist() == [False, True, False]
    assert (~a).tolist() == [False, False, True]
    assert (a & b).dtype is burn.bool
    i, j = burn.tensor([12, 10]), burn.tensor([10, 6])
    assert (i & j).tolist() == [8, 2] and (i | j).tolist() == [14, 14] and (i ^ j).tolist() == [6, 12]
    assert (~burn.tensor([0, 5])).tolist() == [-1, -6]
    assert (5 & i).tolist() == [4, 0]
    assert burn.tensor([0.0, 2.0]).logical_not().tolist() == [True, False]
    assert burn.tensor([0, 3]).logical_and(burn.tensor([1, 1])).tolist() == [False, True]
    with pytest.raises(burn.DTypeError, match=r"and: expected bool or integer tensors, got float32"):
        burn.tensor([1.0]) & burn.tensor([1.0])


def test_maximum_minimum_atan2():
    close(t(A).maximum(t(B)), np.maximum(A, B))
    close(t(A).minimum(0.0), np.minimum(A, 0.0))
    close(t(A).atan2(t(B)), np.arctan2(A, B), rtol=1e-5)
    nan = t(np.array([np.nan, 1.0], np.float32))
    assert np.isnan(nan.maximum(2.0).numpy()[0])


def test_clamp():
    close(t(A).clamp(-0.5, 0.5), np.clip(A, -0.5, 0.5))
    close(t(A).clamp(min=0.0), np.maximum(A, 0))
    close(t(A).clamp_max(0.1), np.minimum(A, 0.1))
    ints = burn.tensor([-5, 0, 5])
    assert ints.clamp(-1, 1).tolist() == [-1, 0, 1] and ints.clamp(-1, 1).dtype is burn.int64
    assert ints.clamp(-0.5, 0.5).dtype is burn.float32
    with pytest.raises(ValueError, match=r"clamp: min=2 is greater than max=1"):
        ints.clamp(2, 1)
    with pytest.raises(ValueError, match="clamp: give at least one of min and max"):
        ints.clamp()
    with pytest.raises(TypeError, match=r"clamp: min must be a number or None, got str"):
        ints.clamp("a")


def test_numpy_operands_and_lists():
    x = t(A)
    close(x + B, A + B)
    close(B + x, B + A)
    close(x * [1.0, 2.0, 3.0, 4.0], A * np.array([1, 2, 3, 4], np.float32))
    out = np.ones((3, 4), np.float32) - x
    assert isinstance(out, burn.Tensor)
    close(out, 1 - A)


def test_operand_errors():
    x = burn.tensor([1.0, 2.0])
    with pytest.raises(TypeError, match=r"unsupported operand type\(s\) for \+"):
        x + "a"
    with pytest.raises(
        TypeError, match=r"add: other operand must be a tensor, a number or an array-like, got dict"
    ):
        x.add({})
    assert (x == None) is False  # noqa: E711  (Python falls back to identity)
    with pytest.raises(
        burn.ShapeError, match=r"shape mismatch in add: lhs \(2,\) and rhs \(3,\) do not broadcast"
    ):
        x + burn.tensor([1.0, 2.0, 3.0])
    with pytest.raises(burn.ShapeError, match=r"shape mismatch in sub: lhs \(3,\) and rhs \(2,\)"):
        [1.0, 2.0, 3.0] - x


def test_float16_and_float64_arithmetic_keeps_dtype():
    for dt, npdt in ((burn.float16, np.float16), (burn.float64, np.float64)):
        a = A.astype(npdt)
        x = burn.from_numpy(a)
        assert x.dtype is dt
        out = (x * 2 + 1).exp()
        assert out.dtype is dt
        np.testing.assert_allclose(out.numpy(), np.exp(a * 2 + 1), rtol=1e-3 if dt is burn.float16 else 1e-12)


def test_small_int_arithmetic_wraps_like_numpy():
    x = burn.tensor([250, 5], dtype=burn.uint8)
    assert (x + 10).tolist() == [4, 15]
    assert (x + 10).dtype is burn.uint8
    y = burn.tensor([1, 2], dtype=burn.int8)
    assert (x + y).dtype is burn.int16 and (x + y).tolist() == [251, 7]
