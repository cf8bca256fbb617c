"""The autodiff checks on wgpu: each function's value and gradients on ``wgpu+autodiff`` match the
same computation on ``cpu+autodiff`` (the numpy reference; its own gradients are checked against
finite differences in burn_autodiff's gradcheck suite)."""

from __future__ import annotations

import burn
import burn.nn.functional as F
import numpy as np
import pytest


def _mlp(x, w1, b1, w2):
    h = F.relu(x @ w1 + b1)
    logits = h @ w2
    return F.cross_entropy(logits, burn.tensor([0, 2, 1, 2], device=x.device))


CASES = {
    # name: (function of the leaves, leaf shapes)
    "mlp_cross_entropy": (_mlp, [(4, 6), (6, 8), (8,), (8, 3)]),
    "conv2d_maxpool_logsoftmax": (
        lambda x, w, p: (
            F.log_softmax(F.max_pool2d(F.conv2d(x, w, None, padding=1), 2, stride=2).reshape(2, -1) @ p, 1)
        ).sum(),
        [(2, 3, 6, 6), (4, 3, 3, 3), (36, 5)],
    ),
    "softmax_weighted": (lambda x, w: (F.softmax(x, 1) * w).sum(), [(3, 7), (3, 7)]),
    "layer_norm_gelu": (lambda x, g: (F.gelu(F.layer_norm(x, (5,)) * g) ** 2).mean(), [(4, 5), (5,)]),
    "broadcast_matmul": (lambda a, b: (a @ b).tanh().sum(), [(2, 1, 3, 4), (5, 4, 2)]),
    "reductions": (lambda x: x.max(1).sum() + x.mean(0).prod() + x.var(1).sum(), [(4, 5)]),
    "index_ops": (
        lambda x, s: (
            x.gather(1, burn.tensor([[0, 2], [1, 1], [3, 0]], device=x.device)).sum()
            + x.select(0, burn.tensor([2, 0, 2], device=x.device)).exp().sum()
            + (s.cumsum(0) * s).sum()
        ),
        [(3, 4), (6,)],
    ),
    "shape_ops": (
        lambda x: (
            (x.permute(1, 0, 2)[1:, ::2].reshape(-1) * burn.arange(8, device=x.device).float()).sum()
            + burn.cat([x, x * 2], 1).pad((1, 1), mode="reflect").sum()
        ),
        [(2, 3, 4)],
    ),
    "sort_topk": (lambda x: x.sort(1)[:, :2].sum() + x.topk(2, 1).pow(2).sum(), [(3, 6)]),
}


def _run(name: str, device):
    fn, shapes = CASES[name]
    rng = np.random.default_rng(7)
    leaves = [
        burn.from_numpy(rng.standard_normal(s).astype(np.float32), device=device).require_grad()
        for s in shapes
    ]
    out = fn(*leaves)
    grads = out.backward()
    return out.numpy(), [leaf.grad(grads).numpy() for leaf in leaves]


@pytest.mark.parametrize("name", sorted(CASES))
def test_gradients_match_cpu(name, dev):
    value, grads = _run(name, burn.device("wgpu", autodiff=True))
    ref_value, ref_grads = _run(name, burn.device("cpu", autodiff=True))
    np.testing.assert_allclose(value, ref_value, rtol=1e-4, atol=1e-5)
    assert len(grads) == len(ref_grads)
    for i, (g, r) in enumerate(zip(grads, ref_grads)):
        assert np.abs(r).max() > 0, f"{name}: reference gradient {i} is all zero (a test that checks nothing)"
        np.testing.assert_allclose(g, r, rtol=1e-4, atol=1e-4, err_msg=f"{name}: gradient of leaf {i}")


def test_gradients_live_on_wgpu(dev):
    d = burn.device("wgpu", autodiff=True)
    x = burn.tensor([1.0, 2.0, 3.0], device=d).require_grad()
    g = (x * x).sum().backward()
    gx = x.grad(g)
    assert gx.device == dev
    np.testing.assert_allclose(gx.numpy(), [2.0, 4.0, 6.0])
