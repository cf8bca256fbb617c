"""Tensors larger than one storage binding (``burn_wgpu._windows``), on a backend whose binding limit is
lowered to 64 KiB so the tests stay small: element-wise ops run per region with windowed bindings,
matmul in blocks (conv and reductions split too: test_binding_split.py); other kernels refuse such a
buffer with a ShapeError naming the limit."""

from __future__ import annotations

import dataclasses

import burn
import numpy as np
import pytest

LIMIT = 1 << 16


@pytest.fixture(scope="module")
def small(backend):
    from burn_wgpu._backend import WgpuBackend

    ctx = backend.ctx
    limits = {**ctx.limits, "max-storage-buffer-binding-size": LIMIT}
    return WgpuBackend(context=dataclasses.replace(ctx, limits=limits))


@pytest.fixture
def big(rng):
    return rng.standard_normal((300, 200)).astype(np.float32)  # 240 KB: nearly 4 bindings


def test_native_device_requests_the_adapters_binding_limits(backend):
    have = backend.ctx.adapter.limits
    if backend.ctx.portable:
        pytest.skip("a portable device keeps WebGPU's defaults")
    assert backend.ctx.limits["max-buffer-size"] == have["max-buffer-size"]
    assert backend.ctx.limits["max-storage-buffer-binding-size"] == min(
        have["max-storage-buffer-binding-size"], have["max-buffer-size"]
    )


def test_elementwise_over_the_binding_limit(small, big, rng):
    be = small
    x = be.from_numpy(big, burn.float32)
    assert x.storage.nbytes > LIMIT
    row = rng.standard_normal(200).astype(np.float32)
    col = rng.standard_normal((300, 1)).astype(np.float32)
    np.testing.assert_allclose(
        be.to_numpy(be.binary("add", x, be.from_numpy(row, burn.float32))), big + row, rtol=1e-6
    )
    np.testing.assert_allclose(
        be.to_numpy(be.binary("mul", x, be.from_numpy(col, burn.float32))), big * col, rtol=1e-6
    )
    np.testing.assert_allclose(be.to_numpy(be.binary("sub", x, 0.5)), big - 0.5, rtol=1e-6)
    # a transposed view: regions follow the view's strides
    np.testing.assert_allclose(be.to_numpy(be.unary("exp", be.permute(x, (1, 0)))), np.exp(big.T), rtol=1e-6)
    np.testing.assert_array_equal(be.to_numpy(be.cast(x, burn.int32)), big.astype(np.int32))
    np.testing.assert_array_equal(be.to_numpy(be.binary("gt", x, 0.0)), big > 0)
    sl = be.slice(x, ((10, 290, 3), (5, 200, 2)))
    np.testing.assert_array_equal(be.to_numpy(be.contiguous(sl)), big[10:290:3, 5:200:2])
    both = be.cat([x, x], 0)
    np.testing.assert_array_equal(be.to_numpy(both), np.concatenate([big, big]))


@pytest.mark.parametrize(
    "case",
    ["linear_weight_t", "dense_rhs", "big_lhs", "big_product", "long_row"],
)
def test_matmul_over_the_binding_limit(small, rng, case):
    be = small
    f = np.float32
    if case == "linear_weight_t":  # x @ W.T with W (out, in) over the limit: split N, copy blocks
        a, w = rng.standard_normal((3, 200)).astype(f), rng.standard_normal((300, 200)).astype(f)
        got = be.matmul(be.from_numpy(a, burn.float32), be.permute(be.from_numpy(w, burn.float32), (1, 0)))
        want = a @ w.T
    elif case == "dense_rhs":
        a, b = rng.standard_normal((5, 300)).astype(f), rng.standard_normal((300, 200)).astype(f)
        got, want = be.matmul(be.from_numpy(a, burn.float32), be.from_numpy(b, burn.float32)), a @ b
    elif case == "big_lhs":
        a, b = rng.standard_normal((300, 200)).astype(f), rng.standard_normal((200, 7)).astype(f)
        got, want = be.matmul(be.from_numpy(a, burn.float32), be.from_numpy(b, burn.float32)), a @ b
    elif case == "big_product":  # operands small, the product over the limit
        a, b = rng.standard_normal((200, 8)).astype(f), rng.standard_normal((8, 150)).astype(f)
        got, want = be.matmul(be.from_numpy(a, burn.float32), be.from_numpy(b, burn.float32)), a @ b
    else:  # one row longer than the limit: split K and sum
        a = rng.standard_normal((1, 30000)).astype(f)
        got = be.matmul(be.from_numpy(a, burn.float32), be.from_numpy(a.T.copy(), burn.float32))
        want = a @ a.T
    np.testing.assert_allclose(be.to_numpy(got), want, rtol=1e-4, atol=1e-3)


def test_other_kernels_refuse_a_buffer_over_the_limit(small, big):
    x = small.from_numpy(big, burn.float32)
    with pytest.raises(burn.ShapeError, match=f"over this wgpu device's max storage binding of {LIMIT}"):
        small.to_numpy(small.cumsum(x, 1))


def test_tensor_over_the_buffer_limit_is_refused(small):
    limit = small.pool.max_buffer
    with pytest.raises(burn.ShapeError, match=r"max buffer size of \d+ bytes"):
        small.empty((limit // 4 + 1,), burn.float32)
