"""API.md, Autodiff: the snippet (require_grad, backward, grad, detach), gradients held per graph."""

from __future__ import annotations

import burn
import numpy as np
from burn_api_md._helpers import ADEV, CPU, close


def test_autodiff_snippet():
    data = [[1.0, -2.0], [3.0, 0.5]]
    x = burn.tensor(data, device=ADEV).require_grad()
    loss = (x * x).sum()
    grads = loss.backward()
    assert isinstance(grads, burn.Gradients)
    gx = x.grad(grads)  # on the inner backend: d(sum x^2)/dx = 2x
    assert gx.device == CPU
    close(gx, 2.0 * np.array(data))
    y = x.detach()
    assert not y.is_require_grad and y.tolist() == data
    unused = burn.tensor([1.0], device=ADEV).require_grad()
    assert unused.grad(grads) is None
    # nothing global: a second graph's gradients are independent of the first
    grads2 = (x * 3.0).sum().backward()
    close(x.grad(grads2), np.full((2, 2), 3.0))
    close(x.grad(grads), 2.0 * np.array(data))
