"""``NativeTrainer``: an exported trainer (``export_training``'s trainer.js + weights.bin) replayed
natively through wgpu-py as the page runs it, without a browser. The MLP and the digits CNN with Adam:
50 steps (four batches in turn, a learning rate changing every step, some steps without read back)
give the losses and accuracies of the same steps in burn on numpy (autodiff, burn.optim's own Adam)
within 1e-4 relative; the trained params equal burn's; evaluate() equals the trained model's metrics;
one submission per step; a batch of the wrong shape is refused before anything runs. The page's own
losses against this replay are checked in test_web_train.py (headless Chromium)."""

from __future__ import annotations

import sys
from typing import Any

import numpy as np
import pytest

pytest.importorskip("wgpu")

from burn_wgpu_tests import test_web_train as cases  # the page tests' models, batches, burn runs

QUIET = (3, 4, 11)  # steps that skip the read back still train


@pytest.mark.parametrize("model", ["mlp", "cnn"])
def test_native_replay_equals_burn_on_numpy(tmp_path: Any, model: str) -> None:
    import burn
    import burn_wgpu.web

    make, x_shape = cases.MODELS[model]
    batches = cases._batches(x_shape)
    accuracies: list[float] = []
    want, trained = cases._native(make, batches, burn.optim.AdamConfig(), accuracies)
    burn_wgpu.web.export_training(
        make(), cases._with_accuracy, burn.optim.AdamConfig().init(), batches[0], tmp_path, lr=cases._lr(0)
    )

    trainer = burn_wgpu.web.NativeTrainer(tmp_path)
    assert trainer.metrics == ["loss", "accuracy"] and [i["name"] for i in trainer.inputs] == ["x", "y"]
    submits = []
    real_submit = type(trainer.device.queue).submit

    def counting(queue: Any, buffers: Any) -> Any:
        if sys._getframe(1).f_code.co_name != "map_async":  # wgpu-py's own submit to map a buffer
            submits.append(len(buffers))
        return real_submit(queue, buffers)

    got = []
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(type(trainer.device.queue), "submit", counting)
        for i in range(cases.STEPS):
            got.append(trainer.step(batches[i % 4], lr=cases._lr(i), read=i not in QUIET))
    assert submits == [1] * cases.STEPS and trainer.step_count == cases.STEPS
    assert [i for i, g in enumerate(got) if g is None] == list(QUIET)
    for i, (g, w, acc) in enumerate(zip(got, want, accuracies)):
        if g is not None:
            assert abs(g["loss"] - w) <= cases.RTOL * abs(w), (i, g, w)
            assert g["accuracy"] == pytest.approx(acc, abs=1e-6), (i, g, acc)
    assert want[-1] < want[0]  # it trains

    tensors = trainer.tensors()
    for name, p in trained.named_params():
        np.testing.assert_allclose(tensors[f"param:{name}"], p.value.numpy(), rtol=1e-3, atol=1e-5)
    x, y = burn.tensor(batches[1]["x"]), burn.tensor(batches[1]["y"])
    want_eval = cases._with_accuracy(trained, x, y)
    evaluated = trainer.evaluate(batches[1])
    assert abs(evaluated["loss"] - want_eval["loss"].item()) <= cases.RTOL * abs(want_eval["loss"].item())
    assert evaluated["accuracy"] == pytest.approx(want_eval["accuracy"].item(), abs=1e-6)

    bad = {"x": np.zeros((2, *x_shape[1:]), np.float32), "y": batches[0]["y"]}
    with pytest.raises(ValueError, match=r"NativeTrainer.step: input 'x' float32\[.*\]: expected shape"):
        trainer.step(bad)
    with pytest.raises(ValueError, match="lr must be a finite number"):
        trainer.step(batches[0], lr=float("nan"))
    assert trainer.step_count == cases.STEPS  # the refused steps did not count
