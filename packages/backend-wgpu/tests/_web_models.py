"""The ONNX models the web-export tests run: burn-onnx's test builders (ResNet-like, MobileNet-like,
transformer encoder with int64 tokens, LSTM/GRU/RNN stack) plus a small U-Net with ConvTranspose and
Resize, with fixed input shapes and example feeds; and ``torch_encoder``, a two-layer
``torch.nn.TransformerEncoder`` as PyTorch exports it (data/make_torch_encoder.py), with PyTorch's
output for a fixed input (``torch_reference``)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from typing import Any

import numpy as np
from onnx import TensorProto, helper

_BUILDERS = Path(__file__).resolve().parents[2] / "onnx" / "tests" / "_builders.py"
_DATA = Path(__file__).resolve().parent / "data"


def torch_reference() -> tuple[np.ndarray, np.ndarray]:
    """PyTorch's (input, output) of ``torch_encoder`` (saved by data/make_torch_encoder.py)."""
    with np.load(_DATA / "torch_encoder_io.npz") as io:
        return io["x"], io["y"]


def _builders() -> Any:
    name = "_burn_onnx_test_builders"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, _BUILDERS)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


def unet(opset: int = 17) -> bytes:
    B = _builders()
    g = B.G(opset, 6)
    e1 = g.op("Relu", [g.conv_bn("x", 3, 8)])
    d1 = g.op("MaxPool", [e1], kernel_shape=[2, 2], strides=[2, 2])
    e2 = g.op("Relu", [g.conv_bn(d1, 8, 16)])
    d2 = g.op("MaxPool", [e2], kernel_shape=[2, 2], strides=[2, 2])
    mid = g.op("Relu", [g.conv_bn(d2, 16, 16)])
    up2 = g.op("ConvTranspose", [mid, g.w(16, 16, 2, 2), g.w(16, scale=0.1)], strides=[2, 2])
    c2 = g.op("Relu", [g.conv_bn(g.op("Concat", [up2, e2], axis=1), 32, 8)])
    up1 = g.op("Resize", [c2, "", g.const([1.0, 1.0, 2.0, 2.0], np.float32)], mode="linear")
    c1 = g.op("Relu", [g.conv_bn(g.op("Concat", [up1, e1], axis=1), 16, 8)])
    out = g.op("Sigmoid", [g.op("Conv", [c1, g.w(2, 8, 1, 1), g.w(2, scale=0.1)])])
    return g.model([helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3, 16, 16])], [out])


def feeds(name: str, seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    if name == "transformer":
        tokens = rng.integers(0, 20, (2, 6)).astype(np.int64)
        mask = np.ones((2, 6), np.int64)
        mask[1, 4:] = 0
        return {"tokens": tokens, "attention_mask": mask}
    if name == "recurrent":
        return {"x": rng.standard_normal((5, 2, 4)).astype(np.float32)}
    if name == "torch_encoder":
        return {"x": rng.standard_normal((2, 10, 64)).astype(np.float32)}
    return {"x": rng.standard_normal((2, 3, 16, 16)).astype(np.float32)}


def model(name: str) -> bytes:
    if name == "unet":
        return unet()
    if name == "torch_encoder":
        return (_DATA / "torch_encoder.onnx").read_bytes()
    return getattr(_builders(), name)(17)


MODELS = ("resnet", "mobilenet", "transformer", "recurrent", "unet", "torch_encoder")
