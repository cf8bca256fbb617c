"""Creation ops, numpy interop, repr, casts between every supported dtype, devices, Transaction and
seeded random numbers."""

from __future__ import annotations

import itertools

import burn
import numpy as np
import pytest
from burn import _dtype as D

CPU_DTYPES = list(D.ALL_DTYPES)  # bfloat16 through ml_dtypes


def _np(dt):
    return burn.backend.NUMPY_DTYPES[dt]


def test_tensor_default_dtypes():
    assert burn.tensor([[1.0, 2.0]]).dtype is burn.float32
    assert burn.tensor([1, 2]).dtype is burn.int64
    assert burn.tensor([True]).dtype is burn.bool
    assert burn.tensor(3).shape == () and burn.tensor(3).item() == 3
    assert burn.tensor([1, 2], dtype=burn.float16).dtype is burn.float16
    assert burn.tensor([1, 2], dtype="int8").dtype is burn.int8
    with pytest.raises(burn.ShapeError, match=r"tensor: data must be a rectangular nested list of numbers"):
        burn.tensor([[1, 2], [3]])
    with pytest.raises(
        TypeError, match=r"tensor: data must be numbers or nested lists of equal length, got dict"
    ):
        burn.tensor({"a": 1})
    with pytest.raises(burn.DTypeError, match=r"tensor: unsupported element type <U1"):
        burn.tensor(["a"])


@pytest.mark.parametrize("dt", CPU_DTYPES)
def test_from_numpy_round_trip_keeps_dtype_and_copies(dt):
    arr = np.arange(6).reshape(2, 3).astype(_np(dt))
    x = burn.from_numpy(arr)
    assert x.dtype is dt and x.shape == (2, 3)
    out = x.numpy()
    assert out.dtype == arr.dtype
    np.testing.assert_array_equal(out, arr)
    np.testing.assert_array_equal(np.asarray(x), arr)
    arr[0, 0] = 1
    assert x.numpy()[0, 0] == 0  # from_numpy copied
    out[0, 1] = 0
    assert x.numpy()[0, 1] == arr[0, 1]  # numpy() copied


def test_from_numpy_errors_and_fallbacks():
    with pytest.raises(TypeError, match=r"from_numpy: expected a numpy.ndarray, got list"):
        burn.from_numpy([1, 2])
    assert burn.from_numpy(np.arange(3, dtype=np.uint16)).dtype is burn.int64  # no uint16: default int
    assert burn.from_numpy(np.zeros(2, np.float32), dtype=burn.float64).dtype is burn.float64
    assert burn.from_numpy(np.zeros(2), dtype=burn.bfloat16).dtype is burn.bfloat16  # ml_dtypes


def test_array_protocol_and_tolist_item():
    x = burn.tensor([[1.5, 2.5]])
    assert np.asarray(x, dtype=np.float64).dtype == np.float64
    assert x.tolist() == [[1.5, 2.5]]
    assert burn.tensor([[7]]).item() == 7
    assert float(burn.tensor(2.5)) == 2.5 and int(burn.tensor(3)) == 3
    assert [10, 20, 30][burn.tensor(1)] == 20
    assert np.exp(x).dtype == np.float32  # numpy functions see an array
    with pytest.raises(ValueError, match=r"item: expected a tensor with one element, got shape \(1, 2\)"):
        x.item()
    with pytest.raises(ValueError, match=r"the truth value of a tensor with shape \(1, 2\) is ambiguous"):
        bool(x)
    assert bool(burn.tensor([1.0]))


def test_repr_shows_values_shape_dtype_device():
    r = repr(burn.tensor([[1.0, 2.0], [3.0, 4.0]]))
    assert r.startswith("tensor([[1., 2.],")
    assert "shape=(2, 2)" in r and "dtype=float32" in r and "device=cpu" in r
    big = repr(burn.zeros(10_000))
    assert "..." in big and len(big) < 500  # summarised
    assert "dtype=int8" in repr(burn.tensor([1], dtype=burn.int8))


@pytest.mark.parametrize("src,dst", list(itertools.product(CPU_DTYPES, CPU_DTYPES)))
def test_cast_between_all_dtypes(src, dst):
    values = np.array([0, 1, 2, 3, 100], dtype=_np(src))
    out = burn.from_numpy(values).cast(dst)
    assert out.dtype is dst
    np.testing.assert_array_equal(out.numpy(), values.astype(_np(dst)))


def test_cast_semantics(monkeypatch):
    x = burn.tensor([-1.7, -0.5, 0.0, 0.5, 1.7])
    assert x.cast(burn.int32).tolist() == [-1, 0, 0, 0, 1]  # truncation toward zero
    assert x.cast(burn.bool).tolist() == [True, True, False, True, True]
    assert x.to(burn.float64).dtype is burn.float64
    assert x.to("int64").dtype is burn.int64
    assert (
        x.int().dtype is burn.int64
        and x.bool().dtype is burn.bool
        and burn.tensor([1]).float().dtype is burn.float32
    )
    assert x.cast(burn.float32) is x
    assert x.cast(burn.bfloat16).tolist() == [-1.703125, -0.5, 0.0, 0.5, 1.703125]  # 8 bits
    cpu = x.device.backend  # as it is without ml_dtypes (Pyodide): no bfloat16
    monkeypatch.setattr(cpu, "dtypes", cpu.dtypes - {burn.bfloat16})
    with pytest.raises(
        burn.DTypeError,
        match=r"cast: dtype bfloat16 is not supported by backend 'ndarray' \(supported: .*float32",
    ):
        x.cast(burn.bfloat16)
    with pytest.raises(TypeError, match=r"dtype: expected one of"):
        x.cast("complex128")


def test_creation_ops():
    np.testing.assert_array_equal(burn.zeros(2, 3).numpy(), np.zeros((2, 3), np.float32))
    np.testing.assert_array_equal(burn.ones((2,), dtype=burn.int32).numpy(), np.ones(2, np.int32))
    assert burn.full((2, 2), 7).dtype is burn.int64 and burn.full((2,), 1.5).tolist() == [1.5, 1.5]
    assert burn.full(3, True).dtype is burn.bool
    assert burn.arange(5).tolist() == [0, 1, 2, 3, 4] and burn.arange(5).dtype is burn.int64
    np.testing.assert_allclose(burn.arange(0, 1, 0.25).numpy(), [0, 0.25, 0.5, 0.75])
    assert burn.arange(5, 0, -2).tolist() == [5, 3, 1]
    np.testing.assert_allclose(burn.linspace(0, 1, 5).numpy(), np.linspace(0, 1, 5))
    np.testing.assert_array_equal(burn.eye(3).numpy(), np.eye(3))
    np.testing.assert_array_equal(burn.eye(2, 3, dtype=burn.int8).numpy(), np.eye(2, 3, dtype=np.int8))
    x = burn.tensor([[1, 2]], dtype=burn.int32)
    assert burn.zeros_like(x).dtype is burn.int32 and burn.ones_like(x).tolist() == [[1, 1]]
    assert burn.full_like(x, 4).tolist() == [[4, 4]]
    assert burn.zeros_like(x, dtype=burn.float64).dtype is burn.float64
    with pytest.raises(burn.ShapeError, match=r"full: shape must have non-negative sizes, got \(-1, 2\)"):
        burn.zeros(-1, 2)
    with pytest.raises(ValueError, match=r"arange: step must not be zero"):
        burn.arange(0, 5, 0)
    with pytest.raises(ValueError, match=r"eye: n must be a non-negative int, got -1"):
        burn.eye(-1)
    with pytest.raises(TypeError, match=r"full: value must be a number or a bool, got str"):
        burn.full((2,), "x")


def test_seed_makes_random_ops_deterministic():
    burn.seed(0)
    a = [burn.rand((3, 4)).numpy(), burn.randn((5,)).numpy(), burn.randint(0, 10, (6,)).numpy()]
    burn.seed(0)
    b = [burn.rand((3, 4)).numpy(), burn.randn((5,)).numpy(), burn.randint(0, 10, (6,)).numpy()]
    for x, y in zip(a, b):
        np.testing.assert_array_equal(x, y)
    burn.seed(1)
    assert not np.array_equal(burn.rand((3, 4)).numpy(), a[0])


def test_random_distributions():
    burn.seed(42)
    u = burn.rand((20_000,), low=-1.0, high=3.0).numpy()
    assert u.dtype == np.float32 and u.min() >= -1.0 and u.max() < 3.0 and abs(u.mean() - 1.0) < 0.05
    n = burn.randn((20_000,), mean=2.0, std=0.5).numpy()
    assert abs(n.mean() - 2.0) < 0.02 and abs(n.std() - 0.5) < 0.02
    i = burn.randint(-3, 3, (1000,))
    assert i.dtype is burn.int64 and set(i.tolist()) == set(range(-3, 3))
    b = burn.bernoulli((10_000,), 0.3)
    assert b.dtype is burn.bool and abs(b.float().mean().item() - 0.3) < 0.03
    with pytest.raises(ValueError, match=r"randint: high \(0\) must be greater than low \(0\)"):
        burn.randint(0, 0, (2,))
    with pytest.raises(ValueError, match=r"seed: expected a non-negative int, got -1"):
        burn.seed(-1)
    with pytest.raises(ValueError, match=r"bernoulli: p must be in \[0, 1\], got 1.5"):
        burn.bernoulli((2,), 1.5)


def test_devices_and_to():
    cpu = burn.device("cpu")
    x = burn.tensor([1.0], device=cpu)
    assert x.device == cpu and str(x.device) == "cpu"
    assert x.to(cpu) is x and x.to("cpu") is x
    with pytest.raises(TypeError, match=r"to: expected a device or a dtype, got 3"):
        x.to(3)
    with pytest.raises(burn.DeviceError, match=r"device: .*nosuch"):
        burn.device("nosuch")


def test_autodiff_surface_without_autodiff_is_a_clear_error():
    x = burn.tensor([1.0])
    with pytest.raises(burn.DeviceError, match=r"require_grad: tensor is on cpu, which has no autodiff"):
        x.require_grad()
    with pytest.raises(burn.DeviceError, match=r"backward: tensor is on cpu, which has no autodiff"):
        x.backward()
    assert x.detach() is x and x.inner() is x and not x.is_require_grad


def test_transaction_reads_in_order_with_one_read_many(monkeypatch):
    a, b, c = burn.tensor([1.0, 2.0]), burn.zeros(3, dtype=burn.int32), burn.tensor([[True]])
    backend = a.backend
    calls = []
    original = type(backend).read_many

    def counting(self, xs):
        calls.append(len(xs))
        return original(self, xs)

    monkeypatch.setattr(type(backend), "read_many", counting)
    out = burn.Transaction().register(a).register(b).register(c).execute()
    assert calls == [3]
    assert [o.dtype for o in out] == [np.float32, np.int32, np.bool_]
    np.testing.assert_array_equal(out[0], [1.0, 2.0])
    np.testing.assert_array_equal(out[1], [0, 0, 0])
    assert burn.Transaction().execute() == []
    assert len(burn.Transaction().register(a)) == 1
    with pytest.raises(TypeError, match=r"Transaction.register: expected a Tensor, got ndarray"):
        burn.Transaction().register(np.zeros(2))


def test_default_read_many_reads_each_in_turn():
    from burn.backend import Backend

    x = burn.tensor([3.0])
    out = Backend.read_many(x.backend, [x.primitive, x.primitive])
    assert [o.tolist() for o in out] == [[3.0], [3.0]]


def test_tensor_cannot_be_constructed_directly_and_is_hashable():
    with pytest.raises(TypeError, match=r"build tensors with burn.tensor"):
        burn.Tensor([1])
    x = burn.tensor([1.0])
    assert {x: 1}[x] == 1
