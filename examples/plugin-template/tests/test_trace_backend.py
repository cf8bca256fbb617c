"""Tests of the trace backend, run against numpy as the reference.

Run them after installing the plugin: ``pip install -e .[test] && python -m pytest tests``.
"""

import burn
import numpy as np
import pytest
from burn.backend import BINARY_OPS, REDUCE_OPS, UNARY_OPS
from burn_plugin_template import TraceBackend
from burn_plugin_template._backend import BINARY, REDUCE, UNARY


def test_implements_the_required_core():
    assert TraceBackend.missing_core() == []


def test_op_tables_cover_burns_tables():
    assert set(UNARY) == set(UNARY_OPS)
    assert set(BINARY) == set(BINARY_OPS)
    assert set(REDUCE) == set(REDUCE_OPS)


def test_discovered_through_its_entry_point():
    info = {b.name: b for b in burn.backends()}["trace"]
    assert info.available, info.reason
    assert info.devices == ["trace:0"]


def test_add_matches_numpy_and_is_traced():
    dev = burn.device("trace")
    a = np.array([[1.5, -2.0], [3.25, 4.0]], dtype=np.float32)
    b = np.array([10.0, 20.0], dtype=np.float32)
    x, y = burn.from_numpy(a, device=dev), burn.from_numpy(b, device=dev)
    out = x + y
    np.testing.assert_array_equal(out.numpy(), a + b)  # exact: one float32 add per element
    assert out.dtype == burn.float32
    assert dev.backend.ops["add"] >= 1


def test_defaults_built_on_the_core_match_numpy():
    # pad (from full + slice_assign) and topk (from sort) are Backend defaults this backend inherits
    dev = burn.device("trace")
    a = np.random.default_rng(0).standard_normal((3, 5))
    x = burn.from_numpy(a, device=dev)
    np.testing.assert_array_equal(
        x.pad((1, 2), value=7.0).numpy(), np.pad(a, ((0, 0), (1, 2)), constant_values=7.0)
    )
    np.testing.assert_array_equal(x.topk(2, dim=1).numpy(), -np.sort(-a, axis=1)[:, :2])
    np.testing.assert_allclose((x @ x.transpose(0, 1)).numpy(), a @ a.T, rtol=1e-12)


def test_unsupported_dtype_is_a_clear_error():
    with pytest.raises(burn.DTypeError, match="float16"):
        burn.zeros((2,), dtype=burn.float16, device=burn.device("trace"))
