"""Shape ops, indexing (ints, slices with any step, None, Ellipsis, int tensors), slice_assign,
cat/stack/split/chunk and pad against numpy."""

from __future__ import annotations

import burn
import numpy as np
import pytest

X = np.arange(2 * 3 * 4, dtype=np.float32).reshape(2, 3, 4)


def t(a):
    return burn.from_numpy(np.asarray(a))


def same(x, ref):
    ref = np.asarray(ref)
    got = x.numpy()
    assert got.shape == ref.shape, (got.shape, ref.shape)
    np.testing.assert_array_equal(got, ref)


def test_reshape_permute_transpose_flatten():
    x = t(X)
    same(x.reshape(4, -1), X.reshape(4, -1))
    same(x.reshape((6, 4)), X.reshape(6, 4))
    same(x.reshape(-1), X.reshape(-1))
    same(x.permute(2, 0, 1), X.transpose(2, 0, 1))
    same(x.permute((-1, 0, 1)), X.transpose(2, 0, 1))
    same(x.transpose(0, 2), X.swapaxes(0, 2))
    same(x.transpose(), X.swapaxes(-1, -2))
    same(x.T, X.T)
    same(x.flatten(), X.reshape(-1))
    same(x.flatten(1), X.reshape(2, 12))
    same(x.flatten(0, 1), X.reshape(6, 4))
    same(burn.tensor(5.0).flatten(), np.array([5.0], np.float32))


def test_reshape_errors():
    x = t(X)
    with pytest.raises(
        burn.ShapeError,
        match=r"reshape: cannot reshape a tensor of shape \(2, 3, 4\) \(24 elements\) to \(5, 5\) \(25 elements\)",
    ):
        x.reshape(5, 5)
    with pytest.raises(burn.ShapeError, match=r"reshape: only one -1 is allowed in shape, got \(-1, -1\)"):
        x.reshape(-1, -1)
    with pytest.raises(burn.ShapeError, match=r"reshape: cannot reshape .* to \(5, -1\)"):
        x.reshape(5, -1)
    with pytest.raises(TypeError, match=r"reshape: shape entries must be ints, got 2.0"):
        x.reshape(2.0, 12)
    with pytest.raises(burn.ShapeError, match=r"permute: dims \(0, 0, 1\) must be a permutation of 0..2"):
        x.permute(0, 0, 1)
    with pytest.raises(burn.ShapeError, match=r"permute: dims \(0, 1\) must name each of the 3 dims once"):
        x.permute(0, 1)
    with pytest.raises(burn.DimError, match=r"transpose: dim1=5 out of range"):
        x.transpose(0, 5)
    with pytest.raises(burn.ShapeError, match=r"flatten: start_dim 2 comes after end_dim 1"):
        x.flatten(2, 1)


def test_squeeze_unsqueeze_expand_repeat_flip_narrow():
    x = t(X)
    same(x.unsqueeze(0), X[None])
    same(x.unsqueeze(-1), X[..., None])
    same(x.unsqueeze(3), X[..., None])
    y = t(X[:, :1, None])
    same(y.squeeze(), X[:, 0])
    same(y.squeeze(1), X[:, 0, None])
    same(y.squeeze((1, 2)), X[:, 0])
    with pytest.raises(burn.ShapeError, match=r"squeeze: dim 0 has size 2, expected 1"):
        y.squeeze(0)
    same(y.expand(2, 5, 3, 4), np.broadcast_to(X[:, :1, None], (2, 5, 3, 4)))
    same(y.expand(3, -1, -1, 2, -1), np.broadcast_to(X[:, :1, None], (3, 2, 1, 2, 4)))
    with pytest.raises(burn.ShapeError, match=r"expand: dim 0 of size 2 cannot expand to 3"):
        y.expand(3, 1, 1, 4)
    same(x.repeat(1, 2, 3), np.tile(X, (1, 2, 3)))
    same(x.repeat(2, 1, 1, 1), np.tile(X, (2, 1, 1, 1)))
    with pytest.raises(
        burn.ShapeError, match=r"repeat: need at least 3 repeats for shape \(2, 3, 4\), got \(2,\)"
    ):
        x.repeat(2)
    same(x.flip(0), X[::-1])
    same(x.flip((0, 2)), X[::-1, :, ::-1])
    same(x.narrow(2, 1, 2), X[:, :, 1:3])
    same(x.narrow(1, -2, 2), X[:, 1:3])
    with pytest.raises(
        burn.IndexOutOfRangeError, match=r"narrow: start=2, length=3 out of range for dim 1 of size 3"
    ):
        x.narrow(1, 2, 3)


INDICES = [
    0,
    -1,
    (1, 2),
    (1, -1, -1),
    slice(None),
    slice(1, None),
    (slice(None), slice(None, None, 2)),
    (slice(None), slice(None, None, -1)),
    (Ellipsis, slice(None, None, -2)),
    (slice(None, None, -1), slice(2, 0, -1), slice(3, None, -3)),
    (slice(5, 0, -1),),
    (slice(0, 0),),
    (slice(3, 1),),
    (None, 1),
    (1, None, slice(None), None),
    (Ellipsis, None),
    (Ellipsis, 1),
    (0, Ellipsis, 0),
    (slice(-100, 100),),
    (slice(None), [0, 2]),
    ([1, 0], slice(None), slice(1, 3)),
    (slice(None), [[0, 1], [2, 2]]),
    (Ellipsis, [-1, 0]),
    (0, [2, 0], [1, 3]),
    (None, [1, 0]),
]


@pytest.mark.parametrize("index", INDICES, ids=[repr(i) for i in INDICES])
def test_getitem_matches_numpy(index):
    same(t(X)[index], X[index])


def test_getitem_with_int_tensor_index():
    idx = burn.tensor([2, 0, -1])
    same(t(X)[:, idx], X[:, [2, 0, -1]])
    same(t(X)[1, burn.tensor(2)], X[1, 2])
    same(t(X)[np.array([1, 0])], X[[1, 0]])


def test_getitem_errors():
    x = t(X)
    with pytest.raises(burn.IndexOutOfRangeError, match=r"index: index 3 out of range for dim 1 of size 3"):
        x[0, 3]
    with pytest.raises(IndexError, match=r"index: too many indices \(4\) for a tensor of rank 3"):
        x[0, 0, 0, 0]
    with pytest.raises(IndexError, match=r"index: an index can only have a single ellipsis"):
        x[..., 0, ...]
    with pytest.raises(
        burn.IndexOutOfRangeError, match=r"index: index value 5 out of range for dim 1 of size 3"
    ):
        x[:, [0, 5]]
    with pytest.raises(burn.DTypeError, match=r"index: index must be an integer tensor, got float32"):
        x[burn.tensor([0.0])]
    with pytest.raises(IndexError, match=r"index: bool indices are not supported"):
        x[True]
    with pytest.raises(TypeError, match=r"index: unsupported index 'a'"):
        x["a"]
    with pytest.raises(IndexError, match=r"index: several int-tensor indices must be on adjacent dims"):
        x[[0], :, [0]]


SLICE_ASSIGN = [
    ((slice(None), 1), 7.0),
    ((0, slice(1, 3)), np.ones((2, 4), np.float32)),
    ((Ellipsis, slice(None, None, -2)), np.arange(2, dtype=np.float32)),
    ((slice(None, None, -1), None, 0), np.arange(8, dtype=np.float32).reshape(2, 1, 4)),
    ((1, 2, 3), -1.0),
    ((slice(0, 2), slice(0, 3, 2), slice(None, None, -1)), np.arange(16, dtype=np.float32).reshape(2, 2, 4)),
]


@pytest.mark.parametrize("index,value", SLICE_ASSIGN, ids=[repr(i) for i, _ in SLICE_ASSIGN])
def test_slice_assign_matches_numpy(index, value):
    ref = X.copy()
    ref[index] = value
    v = value if isinstance(value, float) else t(value)
    before = t(X)
    same(before.slice_assign(index, v), ref)
    same(before, X)  # the original is untouched


def test_slice_assign_errors_and_casts():
    x = t(X)
    with pytest.raises(
        burn.ShapeError,
        match=r"slice_assign: value of shape \(3,\) does not fit the indexed region of shape \(2, 4\)",
    ):
        x.slice_assign((0, slice(1, 3)), burn.ones(3))
    with pytest.raises(IndexError, match=r"slice_assign: int-tensor indices are not supported"):
        x.slice_assign([0, 1], 1.0)
    ints = burn.zeros(3, dtype=burn.int32).slice_assign(slice(1, None), burn.tensor([1.9, 2.1]))
    assert ints.dtype is burn.int32 and ints.tolist() == [0, 1, 2]


def test_cat_stack():
    a, b = X, X + 100
    same(burn.cat([t(a), t(b)], 1), np.concatenate([a, b], 1))
    same(burn.cat([t(a), t(b)[:, :1]], dim=1), np.concatenate([a, b[:, :1]], 1))
    same(burn.cat([t(a), t(b)], -1), np.concatenate([a, b], -1))
    same(burn.stack([t(a), t(b)], 0), np.stack([a, b], 0))
    same(burn.stack([t(a), t(b)], -1), np.stack([a, b], -1))
    mixed = burn.cat([burn.tensor([1, 2]), burn.tensor([0.5])])
    assert mixed.dtype is burn.float32 and mixed.tolist() == [1.0, 2.0, 0.5]
    with pytest.raises(
        burn.ShapeError,
        match=r"cat: tensor 1 has shape \(2, 4, 4\), incompatible with tensor 0's \(2, 3, 4\) along dim 0",
    ):
        burn.cat([t(a), burn.zeros((2, 4, 4))])
    with pytest.raises(burn.ShapeError, match=r"stack: tensor 1 has shape \(3,\), expected \(2,\)"):
        burn.stack([burn.zeros(2), burn.zeros(3)])
    with pytest.raises(ValueError, match=r"cat: expected a non-empty sequence of tensors"):
        burn.cat([])
    with pytest.raises(TypeError, match=r"stack: expected tensors, got list"):
        burn.stack([[1, 2]])
    with pytest.raises(burn.ShapeError, match=r"cat: cannot concatenate 0-d tensors"):
        burn.cat([burn.tensor(1.0), burn.tensor(2.0)])


def test_split_chunk():
    x = t(np.arange(10, dtype=np.float32))
    assert [p.tolist() for p in x.split(4)] == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]
    assert [p.shape for p in x.split([2, 3, 5])] == [(2,), (3,), (5,)]
    parts = t(X).split(2, dim=2)
    for p, ref in zip(parts, np.split(X, 2, axis=2)):
        same(p, ref)
    assert [p.shape[0] for p in x.chunk(3)] == [4, 4, 2]  # as torch.chunk
    assert [p.shape[0] for p in x.chunk(5)] == [2, 2, 2, 2, 2]
    assert [p.shape[0] for p in x.chunk(20)] == [1] * 10
    with pytest.raises(
        burn.ShapeError, match=r"split: sizes \[2, 2\] must be non-negative and sum to dim 0's size 10"
    ):
        x.split([2, 2])
    with pytest.raises(ValueError, match=r"split: split_size must be positive, got 0"):
        x.split(0)
    with pytest.raises(ValueError, match=r"chunk: chunks must be a positive int, got 0"):
        x.chunk(0)


@pytest.mark.parametrize("mode", ["constant", "reflect", "edge"])
@pytest.mark.parametrize("pads", [(1, 2), (0, 1, 2, 0), (2, 1, 1, 2, 1, 0)])
def test_pad_matches_numpy(mode, pads):
    np_pads = [(0, 0)] * 3
    for i in range(len(pads) // 2):
        np_pads[2 - i] = (pads[2 * i], pads[2 * i + 1])
    kwargs = {"constant_values": 1.5} if mode == "constant" else {}
    ref = np.pad(X, np_pads, mode=mode, **kwargs)
    same(t(X).pad(pads, mode=mode, value=1.5), ref)


def test_pad_dtypes_and_errors():
    ints = burn.tensor([[1, 2], [3, 4]])
    assert ints.pad((1, 1), value=0).dtype is burn.int64
    assert ints.pad((1, 0), value=0.5).dtype is burn.float32
    out = burn.tensor([1.0]).pad((1, 0), value=float("nan"))
    assert np.isnan(out.numpy()[0])
    assert ints.pad((1, 1), mode="replicate").tolist() == [[1, 1, 2, 2], [3, 3, 4, 4]]
    with pytest.raises(ValueError, match=r"pad: reflect pads \(2, 0\) must be smaller than dim 1's size 2"):
        ints.pad((2, 0), mode="reflect")
    with pytest.raises(ValueError, match=r"pad: mode must be 'constant', 'reflect' or 'edge', got 'wrap'"):
        ints.pad((1, 1), mode="wrap")
    with pytest.raises(ValueError, match=r"pad: pads must hold pairs for at most 2 dims"):
        ints.pad((1, 1, 1))
    with pytest.raises(ValueError, match=r"pad: pads must be non-negative ints"):
        ints.pad((-1, 1))


def test_len_iter_numel():
    x = t(X)
    assert len(x) == 2 and x.numel() == 24 and x.ndim == 3
    assert [r.shape for r in x] == [(3, 4), (3, 4)]
    with pytest.raises(TypeError, match="len\\(\\) of a 0-d tensor"):
        len(burn.tensor(1.0))
