"""Convolutions and reductions over tensors larger than one storage binding (``burn_wgpu._split``), on
a backend whose binding limit is lowered to 64 KiB so the tests stay small, against burn's cpu backend
(conv) and numpy (reductions): the batch, groups, output channels or input channels split until each
piece fits; reductions read blocks of rows through windows, and a row over the limit in pieces."""

from __future__ import annotations

import dataclasses

import burn
import numpy as np
import pytest
from burn.nn import functional as F

LIMIT = 1 << 16


@pytest.fixture(scope="module")
def small(backend):
    from burn_wgpu._backend import WgpuBackend

    ctx = backend.ctx
    limits = {**ctx.limits, "max-storage-buffer-binding-size": LIMIT}
    return WgpuBackend(context=dataclasses.replace(ctx, limits=limits))


# (input shape, weight shape, stride, padding, groups): each has a tensor over 64 KiB
CONVS = {
    "batch": ((8, 4, 24, 24), (6, 4, 3, 3), 1, 1, 1),  # input 74 KB: halved along the batch
    "big_weight": ((2, 48, 6, 6), (80, 48, 3, 3), 1, 1, 1),  # weight 138 KB: output channels
    "big_output": ((1, 3, 16, 16), (96, 3, 3, 3), 1, 1, 1),  # output 98 KB: output channels
    "one_image": ((1, 40, 22, 22), (4, 40, 3, 3), 2, 0, 1),  # one image 77 KB: input channels summed
    "depthwise": ((1, 32, 24, 24), (32, 1, 3, 3), 1, 1, 32),  # 74 KB, groups = channels
    "grouped": ((2, 16, 24, 24), (8, 4, 5, 5), 1, 2, 4),  # 74 KB in, 4 groups
}


@pytest.mark.parametrize("case", list(CONVS))
def test_conv2d_over_the_binding_limit(small, rng, case):
    xs, ws, stride, pad, groups = CONVS[case]
    x = rng.standard_normal(xs).astype(np.float32)
    w = (rng.standard_normal(ws) * 0.2).astype(np.float32)
    b = rng.standard_normal(ws[0]).astype(np.float32)
    want = F.conv2d(burn.tensor(x), burn.tensor(w), burn.tensor(b), stride=stride, padding=pad, groups=groups)
    be = small
    args = (be.from_numpy(x, burn.float32), be.from_numpy(w, burn.float32), be.from_numpy(b, burn.float32))
    assert max(t.storage.nbytes for t in args) > LIMIT or want.numel() * 4 > LIMIT
    got = be.conv(*args, (stride, stride), (pad, pad), (1, 1), groups)
    np.testing.assert_allclose(be.to_numpy(got), want.numpy(), rtol=1e-4, atol=1e-4)


def test_conv2d_of_a_view_into_a_large_buffer(small, rng):
    """Each piece fits but lies in a buffer over the limit: the kernels get a dense copy."""
    be = small
    big = rng.standard_normal((6, 3, 40, 40)).astype(np.float32)  # 115 KB
    w = rng.standard_normal((4, 3, 3, 3)).astype(np.float32)
    view = be.slice(be.from_numpy(big, burn.float32), ((4, 5, 1), (0, 3, 1), (0, 40, 1), (0, 40, 1)))
    got = be.conv(view, be.from_numpy(w, burn.float32), None, (1, 1), (0, 0), (1, 1), 1)
    want = F.conv2d(burn.tensor(big[4:5]), burn.tensor(w))
    np.testing.assert_allclose(be.to_numpy(got), want.numpy(), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("op", ["sum", "mean", "max", "min"])
def test_reductions_over_the_binding_limit(small, rng, op):
    be = small
    a = rng.standard_normal((300, 200)).astype(np.float32)  # 240 KB: rows in blocks of windows
    x = be.from_numpy(a, burn.float32)
    ref = getattr(np, op)
    for dims in ((1,), (0,), (0, 1)):  # dim 0: the moved copy is over the limit too; (0, 1): one long row
        got = be.to_numpy(be.reduce(op, x, dims, False))
        np.testing.assert_allclose(got, ref(a, axis=dims), rtol=1e-4, atol=1e-3, err_msg=f"{op} over {dims}")


def test_bool_and_int_reductions_over_the_binding_limit(small, rng):
    be = small
    a = rng.integers(-50, 50, (40, 1000)).astype(np.int32)  # 160 KB, rows of 4 KB
    x = be.from_numpy(a, burn.int32)
    np.testing.assert_array_equal(be.to_numpy(be.reduce("sum", x, (0, 1), False)), a.sum())
    np.testing.assert_array_equal(be.to_numpy(be.reduce("max", x, (1,), True)), a.max(1, keepdims=True))
    positive = be.binary("gt", x, -49)
    np.testing.assert_array_equal(be.to_numpy(be.reduce("all", positive, (1,), False)), (a > -49).all(1))
    np.testing.assert_array_equal(be.to_numpy(be.reduce("any", positive, (0, 1), False)), (a > -49).any())


@pytest.mark.parametrize("op", ["argmax", "argmin"])
def test_arg_reductions_over_the_binding_limit(small, rng, op):
    be = small
    a = rng.standard_normal((300, 200)).astype(np.float32)
    x = be.from_numpy(a, burn.float32)
    for dim in (0, 1):
        got = be.to_numpy(be.arg_reduce(op, x, dim, False))
        np.testing.assert_array_equal(got, getattr(np, op)(a, axis=dim), err_msg=f"{op} over {dim}")
    row = rng.standard_normal(40000).astype(np.float32)  # one row of 160 KB: pieces, then the best piece
    row[[100, 39000]] = 50.0 if op == "argmax" else -50.0  # a tie: the first index wins, as numpy's
    got = be.to_numpy(be.arg_reduce(op, be.from_numpy(row, burn.float32), 0, False))
    assert int(got) == getattr(np, op)(row) == 100


def test_fused_chains_over_the_binding_limit_run_op_by_op(small, rng):
    """Fused kernels bind whole buffers: a plan reading (or an element-wise plan writing) a tensor over
    the limit runs op by op instead, through the ops above that split."""
    from burn.fusion import Fusion

    fb = Fusion(small)
    a = rng.standard_normal((300, 200)).astype(np.float32)
    x = fb.from_numpy(a, burn.float32)
    y = fb.binary("mul", fb.unary("exp", fb.binary("mul", x, 0.1)), 2.0)  # an element-wise chain
    mean = fb.reduce("mean", fb.binary("add", x, 1.0), (1,), False)  # a reduce kernel's chain
    np.testing.assert_allclose(fb.to_numpy(y), np.exp(a * 0.1) * 2.0, rtol=1e-5)
    np.testing.assert_allclose(fb.to_numpy(mean), (a + 1.0).mean(1), rtol=1e-4, atol=1e-5)
    small_out = fb.reduce("sum", fb.binary("mul", fb.from_numpy(a[:10], burn.float32), 2.0), (1,), False)
    np.testing.assert_allclose(fb.to_numpy(small_out), (a[:10] * 2).sum(1), rtol=1e-4, atol=1e-4)
    assert fb.stats["kernels"] >= 1  # plans within the limit still run as fused kernels
