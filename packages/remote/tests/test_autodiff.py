"""Autodiff runs on the client over the remote device: a small training loop gives the parameters the
same loop gives on the local cpu device."""

from __future__ import annotations

import burn
import numpy as np
from burn import nn
from burn.nn import functional as F


class Mlp(nn.Module):
    def __init__(self, device):
        self.l1 = nn.LinearConfig(8, 16).init(device)
        self.l2 = nn.LinearConfig(16, 3).init(device)

    def forward(self, x):
        return self.l2(F.relu(self.l1(x)))


def _train(device, steps=15):
    burn.seed(42)
    model = Mlp(device)
    opt = burn.optim.AdamConfig().init()
    rng = np.random.default_rng(0)
    x = rng.standard_normal((32, 8)).astype(np.float32)
    y = x[:, :3].argmax(1)  # a learnable rule: the loss must go down
    losses = []
    for _ in range(steps):
        logits = model(burn.tensor(x, device=device))
        loss = F.cross_entropy(logits, burn.tensor(y, device=device))
        grads = loss.backward()
        model = opt.step(1e-2, model, grads)
        losses.append(loss.item())
    return losses, model.record()


def test_training_loop_equals_local_cpu(server):
    remote = burn.device("remote:50", url=server.url, token=server.token, autodiff=True)
    local = burn.device("cpu", autodiff=True)
    got_losses, got = _train(remote)
    want_losses, want = _train(local)
    np.testing.assert_allclose(got_losses, want_losses, rtol=1e-5, atol=1e-6)
    assert got_losses[-1] < got_losses[0]
    assert got.keys() == want.keys()
    for name in want:
        np.testing.assert_allclose(got[name], want[name], rtol=1e-5, atol=1e-6, err_msg=name)
