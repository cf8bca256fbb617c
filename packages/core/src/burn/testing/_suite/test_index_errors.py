"""Out-of-range indices are errors on every backend, with the cpu message.

Host backends raise at the call; device backends may check on the device and raise at the next read or
sync of the device instead (``Backend.check_index``). Either way the error names the op, the dim, the
bad value and the size, nothing outside the tensors is touched, and the device works afterwards.
"""

from __future__ import annotations

import numpy as np
import pytest

import burn

X = np.arange(12, dtype=np.float32).reshape(3, 4)


def _cases(dev):
    def t(a, dtype=None):
        return burn.tensor(a, device=dev, dtype=dtype)

    x = t(X)
    return {
        "gather": (
            lambda: x.gather(1, t([[0, 9, 1, 2]] * 3)),
            r"gather: index value 9 out of range for dim 1 of size 4",
        ),
        "gather_negative": (
            lambda: x.gather(0, t([[0, -4, 1, 2]])),
            r"gather: index value -4 out of range for dim 0 of size 3",
        ),
        "select": (
            lambda: x.select(0, t([1, 3])),
            r"select: indices value 3 out of range for dim 0 of size 3",
        ),
        "scatter_add": (
            lambda: x.scatter_add(1, t([[0, 1, 2, 70]] * 3), x),
            r"scatter_add: index value 70 out of range for dim 1 of size 4",
        ),
        "select_add": (
            lambda: x.select_add(1, t([0, -5]), x[:, :2]),
            r"select_add: indices value -5 out of range for dim 1 of size 4",
        ),
        "embedding": (
            lambda: burn.nn.functional.embedding(t([[0, 3]]), x),
            r"embedding: index 3 out of range for a weight with 3 rows",
        ),
        "embedding_negative": (
            lambda: burn.nn.functional.embedding(t([[-1]]), x),
            r"embedding: index -1 out of range for a weight with 3 rows",
        ),
        "one_hot": (
            lambda: t([0, 3, 1]).one_hot(3),
            r"one_hot: class index 3 out of range for num_classes=3 \(expected 0..2\)",
        ),
        "tensor_index": (
            lambda: x[:, t([0, 4])],
            r"index: index value 4 out of range for dim 1 of size 4",
        ),
    }


CASES = list(_cases(None))


@pytest.mark.parametrize("case", CASES)
def test_out_of_range_index_is_an_error(case, burn_device):
    dev = burn_device
    guard = burn.tensor(np.full(64, 7.0, np.float32), device=dev)
    call, message = _cases(dev)[case]
    with pytest.raises(burn.IndexOutOfRangeError, match=message):
        out = call()  # host backends raise here
        out.numpy()  # device backends at the first read after the op
    # the error was reported once and cleared; the device keeps working, other memory is intact
    np.testing.assert_array_equal(guard.numpy(), np.full(64, 7.0, np.float32))
    x = burn.tensor(X, device=dev)
    got = x.gather(1, burn.tensor([[3, 0, -1, 1]] * 3, device=dev)).numpy()
    np.testing.assert_array_equal(got, np.take_along_axis(X, np.array([[3, 0, 3, 1]] * 3), 1))


def test_error_surfaces_at_sync(burn_device):
    dev = burn_device
    x = burn.tensor(X, device=dev)
    with pytest.raises(burn.IndexOutOfRangeError, match=r"select: indices value 5 out of range"):
        x.select(1, burn.tensor([5], device=dev))
        dev.backend.sync()
    dev.backend.sync()  # reported once: a second sync is clean


def test_first_failing_op_is_reported(burn_device):
    dev = burn_device
    x = burn.tensor(X, device=dev)
    with pytest.raises(burn.IndexOutOfRangeError, match=r"value 8 out of range for dim 1") as info:
        a = x.select(1, burn.tensor([8], device=dev))
        b = x.select(0, burn.tensor([9], device=dev))
        burn.Transaction().register(a).register(b).execute()
    assert "value 9" not in str(info.value)


def test_valid_negative_indices_wrap(burn_device):
    dev = burn_device
    x = burn.tensor(X, device=dev)
    got = x.select(0, burn.tensor([-1, 0, -3], device=dev)).numpy()
    np.testing.assert_array_equal(got, X[[2, 0, 0]])
    got = x.scatter_add(1, burn.tensor([[-1, 0, 0, 0]] * 3, device=dev), x).numpy()
    ref = X.copy()
    np.add.at(ref, (np.arange(3)[:, None], np.array([[3, 0, 0, 0]] * 3)), X)
    np.testing.assert_allclose(got, ref, rtol=1e-6)
