"""Real model exports for ``bench_onnx_models.py``: PyTorch models with random weights, exported by
``torch.onnx.export`` (TorchScript exporter, opset 17, batch dim symbolic ``N``) to ONNX bytes.

- ``resnet18``: ResNet-18 (``_model_zoo``'s, widths 64-512, 1000 classes) at 112x112;
- ``mobilenetv2``: MobileNetV2 (width 1.0: inverted residuals, depthwise 3x3, ReLU6) at 112x112;
- ``bert``: a BERT-style encoder (token and position embeddings, post-norm blocks with GELU), 4 layers
  of d 256, 4 heads, vocab 30522, seq 128, a 2-class head on the first token;
- ``gpt2``: a GPT-2-style decoder (pre-norm blocks, causal attention, head tied to the embedding), 4
  layers of d 256, 4 heads, vocab 8192, seq 128;
- ``vit``: a ViT-Tiny-style encoder (16x16 patches by a strided conv, class token) at 112x112, 6
  pre-norm blocks of d 192, 3 heads, 1000 classes.

Sizes are small enough to time at batch 32 on a few cores; the architectures (ops, fusion patterns,
layouts) are the real ones. Needs torch (and onnx); transformers and torchvision are not used.
"""

from __future__ import annotations

import io
from typing import Any

import numpy as np
from _model_zoo import EncoderSize, GptSize, ResNetSize, torch_model

MODELS = ("resnet18", "mobilenetv2", "bert", "gpt2", "vit")
SIZES: dict[str, Any] = {
    "resnet18": ResNetSize(image=112, classes=1000),
    "mobilenetv2": ResNetSize(image=112, classes=1000),  # image size and classes only
    "bert": EncoderSize(kind="bert", d=256, heads=4, layers=4, seq=128, classes=2),
    "gpt2": GptSize(vocab=8192, seq=128, d=256, heads=4, layers=4),
    "vit": EncoderSize(d=192, heads=3, layers=6, image=112, patch=16),
}
# MobileNetV2's inverted residual settings: (expansion t, channels c, repeats n, first stride s)
_MBV2 = (
    (1, 16, 1, 1),
    (6, 24, 2, 2),
    (6, 32, 3, 2),
    (6, 64, 4, 2),
    (6, 96, 3, 1),
    (6, 160, 3, 2),
    (6, 320, 1, 1),
)


def _mobilenet_v2(torch: Any, classes: int) -> Any:
    nn = torch.nn

    def conv_bn(c_in: int, c_out: int, k: int, stride: int, groups: int = 1, act: bool = True) -> list:
        layers = [nn.Conv2d(c_in, c_out, k, stride, k // 2, groups=groups, bias=False), nn.BatchNorm2d(c_out)]
        return layers + [nn.ReLU6()] if act else layers

    class Inverted(nn.Module):
        def __init__(self, c_in: int, c_out: int, stride: int, t: int) -> None:
            super().__init__()
            mid = c_in * t
            layers = conv_bn(c_in, mid, 1, 1) if t != 1 else []
            layers += conv_bn(mid, mid, 3, stride, groups=mid) + conv_bn(mid, c_out, 1, 1, act=False)
            self.body = nn.Sequential(*layers)
            self.skip = stride == 1 and c_in == c_out

        def forward(self, x: Any) -> Any:
            y = self.body(x)
            return x + y if self.skip else y

    class MobileNetV2(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            layers, c_in = conv_bn(3, 32, 3, 2), 32
            for t, c, n, s in _MBV2:
                for i in range(n):
                    layers.append(Inverted(c_in, c, s if i == 0 else 1, t))
                    c_in = c
            layers += conv_bn(c_in, 1280, 1, 1)
            self.features = nn.Sequential(*layers)
            self.classifier = nn.Linear(1280, classes)

        def forward(self, x: Any) -> Any:
            return self.classifier(torch.flatten(nn.functional.adaptive_avg_pool2d(self.features(x), 1), 1))

    return MobileNetV2()


def inputs(name: str, batch: int, seed: int = 0) -> np.ndarray:
    """One input batch for ``name``: token ids (int64) or images (float32, NCHW)."""
    rng = np.random.default_rng(seed)
    size = SIZES[name]
    if name == "bert":
        return rng.integers(0, size.vocab, (batch, size.seq)).astype(np.int64)
    if name == "gpt2":
        return rng.integers(0, size.vocab, (batch, size.seq)).astype(np.int64)
    return rng.standard_normal((batch, 3, size.image, size.image)).astype(np.float32)


def export(name: str, seed: int = 0) -> bytes:
    """``name``'s model with random weights (BatchNorm statistics randomised too) as ONNX bytes."""
    import torch

    torch.manual_seed(seed)
    size = SIZES[name]
    if name == "mobilenetv2":
        model = _mobilenet_v2(torch, size.classes)
    else:
        model = torch_model({"gpt2": "gpt"}.get(name, name), size, torch)
    with torch.no_grad():  # running statistics away from (0, 1), so a BN fold has work to do
        for m in model.modules():
            if isinstance(m, torch.nn.BatchNorm2d):
                m.running_mean.uniform_(-0.1, 0.1)
                m.running_var.uniform_(0.5, 1.5)
    model.eval()
    x = torch.from_numpy(inputs(name, 2))
    buf = io.BytesIO()
    torch.onnx.export(
        model,
        (x,),
        buf,
        opset_version=17,
        dynamo=False,
        input_names=["x"],
        output_names=["y"],
        dynamic_axes={"x": {0: "N"}, "y": {0: "N"}},
    )
    return buf.getvalue()
