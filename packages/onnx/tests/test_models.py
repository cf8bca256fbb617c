"""Whole small models with random weights against onnxruntime, on every available backend."""

from __future__ import annotations

import numpy as np
import pytest
from burn_onnx_tests import _builders as B
from burn_onnx_tests._util import assert_close, reference, run_burn

R = np.random.default_rng(7)


def _compare(model: bytes, feeds: dict, device, rtol: float = 1e-3, atol: float = 1e-4) -> None:
    want = reference(model, feeds)
    got = run_burn(model, feeds, device)
    if device.backend.name != "ndarray":
        rtol, atol = max(rtol, 2e-3), max(atol, 2e-3)
    assert len(got) == len(want)
    for i, (g, w) in enumerate(zip(got, want)):
        assert_close(g, w, rtol, atol, f"output {i}")


@pytest.mark.parametrize("opset", [13, 17])
def test_resnet_like(opset, device):
    _compare(B.resnet(opset), {"x": R.standard_normal((2, 3, 16, 16)).astype(np.float32)}, device)


@pytest.mark.parametrize("opset", [13, 17])
def test_mobilenet_like(opset, device):
    _compare(B.mobilenet(opset), {"x": R.standard_normal((2, 3, 16, 16)).astype(np.float32)}, device)


@pytest.mark.parametrize("opset", [13, 17])
def test_transformer_encoder_block(opset, device):
    tokens = R.integers(0, 20, (2, 6)).astype(np.int64)
    mask = np.ones((2, 6), np.int64)
    mask[1, 4:] = 0
    _compare(B.transformer(opset), {"tokens": tokens, "attention_mask": mask}, device)


@pytest.mark.parametrize("opset", [13, 17])
def test_recurrent_stack(opset, device):
    _compare(B.recurrent(opset), {"x": R.standard_normal((5, 2, 4)).astype(np.float32)}, device)


@pytest.mark.parametrize("opset", [7, 8, 9])
def test_old_opset_cnn(opset, device):
    _compare(B.old_cnn(opset), {"x": R.standard_normal((2, 3, 8, 8)).astype(np.float32)}, device)


def test_opset6_cnn_against_numpy(device):
    """onnxruntime no longer runs opset 6; the same graph at opset 7 is the reference."""
    x = {"x": R.standard_normal((2, 3, 8, 8)).astype(np.float32)}
    want = reference(B.old_cnn(7, upsample=False), x)
    got = run_burn(B.old_cnn(6, upsample=False), x, device)
    assert_close(got[0], want[0], 2e-3, 2e-3)


def test_transformer_second_call_reuses_host_values(device):
    """Different shapes give different host-resolved plans; the same shapes reuse them."""
    import burn_onnx

    model = burn_onnx.load(B.transformer(17), device=device)
    for length in (6, 4, 6):
        tokens = R.integers(0, 20, (1, length)).astype(np.int64)
        mask = np.ones((1, length), np.int64)
        want = reference(B.transformer(17), {"tokens": tokens, "attention_mask": mask})
        got = model(tokens=tokens, attention_mask=mask)
        assert_close(got[0].numpy(), want[0], 2e-3, 2e-3)
    assert len(model._runner._cache) == 2
