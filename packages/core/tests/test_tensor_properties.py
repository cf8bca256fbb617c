"""Hypothesis property tests: broadcasting matches numpy for every pair of compatible shapes (and is
rejected with a ShapeError for incompatible ones), reshape/permute round trips preserve values, and
slicing matches numpy for arbitrary slices."""

from __future__ import annotations

import burn
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

SETTINGS = settings(max_examples=60, deadline=None)


@SETTINGS
@given(hnp.mutually_broadcastable_shapes(num_shapes=2, min_dims=0, max_dims=4, max_side=4), st.data())
def test_broadcasting_matches_numpy(shapes, data):
    sa, sb = shapes.input_shapes
    a = data.draw(hnp.arrays(np.float32, sa, elements=st.floats(-10, 10, width=32)))
    b = data.draw(hnp.arrays(np.float32, sb, elements=st.floats(-10, 10, width=32)))
    ta, tb = burn.from_numpy(a), burn.from_numpy(b)
    for out, ref in (
        (ta + tb, a + b),
        (ta * tb, a * b),
        (tb - ta, b - a),
        (burn.where(ta > 0, ta, tb), np.where(a > 0, a, b)),
        (ta.maximum(tb), np.maximum(a, b)),
    ):
        assert out.shape == shapes.result_shape
        np.testing.assert_allclose(out.numpy(), ref, rtol=1e-6, atol=1e-6)
    assert ta.expand(*shapes.result_shape).shape == shapes.result_shape


@SETTINGS
@given(
    hnp.array_shapes(min_dims=1, max_dims=3, min_side=2, max_side=4),
    hnp.array_shapes(min_dims=1, max_dims=3, min_side=2, max_side=4),
)
def test_incompatible_shapes_raise_shape_error(sa, sb):
    try:
        np.broadcast_shapes(sa, sb)
        compatible = True
    except ValueError:
        compatible = False
    a, b = burn.zeros(sa), burn.zeros(sb)
    if compatible:
        assert (a + b).shape == np.broadcast_shapes(sa, sb)
    else:
        try:
            a + b
        except burn.ShapeError as exc:
            assert "shape mismatch in add" in str(exc) and str(sa) in str(exc) and str(sb) in str(exc)
        else:
            raise AssertionError(f"{sa} + {sb} should not broadcast")


@st.composite
def _reshape_case(draw):
    shape = draw(hnp.array_shapes(min_dims=0, max_dims=4, min_side=0, max_side=4))
    n = int(np.prod(shape))
    # a new shape with the same number of elements, from a factorisation of n
    dims, rest = [], n
    for _ in range(draw(st.integers(0, 3))):
        divisors = [d for d in range(1, rest + 1) if rest % d == 0] if rest else [0, 1, 2]
        d = draw(st.sampled_from(divisors))
        dims.append(d)
        rest = rest // d if d else rest
    new = (*dims, rest) if n else (*dims, 0)
    if n and int(np.prod(new)) != n:
        new = (n,)
    use_minus_one = n > 0 and draw(st.booleans())
    return shape, new, use_minus_one


@SETTINGS
@given(_reshape_case(), st.data())
def test_reshape_round_trip(case, data):
    shape, new, use_minus_one = case
    a = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)
    x = burn.from_numpy(a)
    target = new
    if use_minus_one:
        i = data.draw(st.integers(0, len(new) - 1))
        target = tuple(-1 if j == i else s for j, s in enumerate(new))
    y = x.reshape(*target)
    assert y.shape == a.reshape(target).shape
    np.testing.assert_array_equal(y.numpy(), a.reshape(target))
    back = y.reshape(shape)
    assert back.shape == shape
    np.testing.assert_array_equal(back.numpy(), a)
    np.testing.assert_array_equal(x.flatten().numpy(), a.reshape(-1))


@SETTINGS
@given(hnp.array_shapes(min_dims=1, max_dims=4, max_side=4), st.data())
def test_permute_round_trip(shape, data):
    a = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)
    perm = data.draw(st.permutations(range(len(shape))))
    inverse = tuple(int(i) for i in np.argsort(perm))
    x = burn.from_numpy(a).permute(*perm)
    np.testing.assert_array_equal(x.numpy(), a.transpose(perm))
    np.testing.assert_array_equal(x.permute(*inverse).numpy(), a)


@SETTINGS
@given(hnp.array_shapes(min_dims=1, max_dims=3, min_side=0, max_side=5), st.data())
def test_basic_indexing_matches_numpy(shape, data):
    a = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)
    index = data.draw(hnp.basic_indices(shape, min_dims=0, allow_newaxis=True, allow_ellipsis=True))
    ref = a[index]
    out = burn.from_numpy(a)[index]
    assert out.shape == ref.shape
    np.testing.assert_array_equal(out.numpy(), ref)
    # slice_assign writes exactly that region
    if ref.size:
        expected = a.copy()
        expected[index] = -1.0
        np.testing.assert_array_equal(burn.from_numpy(a).slice_assign(index, -1.0).numpy(), expected)
