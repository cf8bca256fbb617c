"""Records read device tensors in one transaction: a model's bytes and an optimizer's record each cost
one device sync on wgpu (a checkpoint used to sync once per tensor), with the same values."""

from __future__ import annotations

import burn
import numpy as np
from burn import nn


def test_model_and_optimizer_records_read_once(dev):
    adev = burn.device(dev, autodiff=True)
    burn.seed(4)

    class Net(nn.Module):
        def __init__(self):
            self.a = nn.LinearConfig(8, 6).init(adev)
            self.b = nn.LinearConfig(6, 3).init(adev)

        def forward(self, x):
            return self.b(self.a(x).relu())

    model, opt = Net(), burn.optim.AdamConfig().init()
    x = burn.tensor(np.ones((2, 8), np.float32), device=adev)
    model = opt.step(0.1, model, (model(x) ** 2).mean().backward())
    with burn.profile(adev) as p:
        data = burn.record.to_bytes(model)
    assert p.syncs == 1
    with burn.profile(adev) as p:
        record = opt.record()
    assert p.syncs == 1
    restored = burn.record.from_bytes(Net(), data)
    for (name, mine), (_, theirs) in zip(model.named_entries(), restored.named_entries()):
        np.testing.assert_array_equal(mine.value.numpy(), theirs.value.numpy(), err_msg=name)
    states = record["states"]
    assert len(states) == 4 and all(isinstance(s["moment_1"], np.ndarray) for s in states.values())
