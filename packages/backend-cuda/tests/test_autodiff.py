"""Autodiff on the CUDA backend: gradients on ``cuda`` match the same graph on ``cpu``."""

from __future__ import annotations

import burn
import numpy as np
import pytest

pytestmark = pytest.mark.gpu


@pytest.fixture(scope="module")
def devices(cuda):
    autodiff = pytest.importorskip("burn_autodiff")
    if not hasattr(autodiff, "Autodiff"):
        pytest.skip("burn_autodiff.Autodiff is not available in this build")
    return burn.device("cpu", autodiff=True), burn.device("cuda", autodiff=True)


def _grads(dev, arrays, fn):
    leaves = [burn.from_numpy(a, device=dev).require_grad() for a in arrays]
    loss = fn(*leaves)
    grads = loss.backward()
    return float(loss.item()), [leaf.grad(grads).numpy() for leaf in leaves]


CASES = {
    "mlp": (
        [(8, 16), (16, 32), (32,), (32, 4)],
        lambda x, w1, b1, w2: ((x @ w1 + b1).tanh() @ w2).sigmoid().mean(),
    ),
    "elementwise": ([(5, 6), (1, 6)], lambda a, b: ((a * b).exp() + (a - b).abs() + (a / (b * b + 1))).sum()),
    "reductions": ([(4, 5, 6)], lambda a: a.max(2).sum() + a.mean((0, 1)).pow(2.0).sum() + a.var(1).sum()),
    "softmax": (
        [(6, 10)],
        lambda a: (burn.nn.functional.log_softmax(a, 1) * burn.nn.functional.softmax(a, 1)).sum(),
    ),
    "indexing": (
        [(6, 5)],
        lambda a: a.gather(1, burn.from_numpy(np.array([[0, 4]] * 6), device=a.device)).sum(),
    ),
}


@pytest.mark.parametrize("case", list(CASES))
def test_gradients_match_cpu(case, devices):
    cpu, cuda = devices
    shapes, fn = CASES[case]
    rng = np.random.default_rng(4)
    arrays = [rng.standard_normal(s).astype(np.float32) * 0.5 for s in shapes]
    ref_loss, ref = _grads(cpu, arrays, fn)
    loss, got = _grads(cuda, arrays, fn)
    assert loss == pytest.approx(ref_loss, rel=1e-5, abs=1e-6)
    for g, r in zip(got, ref, strict=True):
        np.testing.assert_allclose(g, r, rtol=1e-4, atol=1e-5)
