"""Regenerate torch_encoder.onnx and torch_encoder_io.npz (needs PyTorch; the tests need only onnx).

The model of issue 32: ``torch.nn.TransformerEncoder`` with d_model 64, 4 heads, 2 layers (default
feed-forward width 2048, post-norm, ReLU), batch_first, in eval mode, exported by the TorchScript
exporter at opset 17. Its two identical layers make burn's fusion replay (and, on wgpu, capture) the
second layer's streams, which the first fused web export recorded in the wrong order. The .npz holds a
fixed input ``x`` (2, 10, 64) and PyTorch's output ``y`` for it.

    python packages/backend-wgpu/tests/data/make_torch_encoder.py
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch

HERE = Path(__file__).resolve().parent


def main() -> None:
    torch.manual_seed(0)
    layer = torch.nn.TransformerEncoderLayer(d_model=64, nhead=4, batch_first=True)
    model = torch.nn.TransformerEncoder(layer, num_layers=2, enable_nested_tensor=False).eval()
    x = torch.randn(2, 10, 64)
    with torch.no_grad():
        y = model(x)
    torch.onnx.export(
        model,
        (x,),
        str(HERE / "torch_encoder.onnx"),
        dynamo=False,
        opset_version=17,
        input_names=["x"],
        output_names=["y"],
    )
    np.savez(HERE / "torch_encoder_io.npz", x=x.numpy(), y=y.numpy())


if __name__ == "__main__":
    main()
