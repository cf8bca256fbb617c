"""Random-input rows for the ops of ``test_ops_standard``: one row per op and attribute form, run against
onnxruntime, or against onnx's own reference evaluator (``ref="onnx"``) where onnxruntime has no kernel
for the op or opset. Inputs listed in ``consts`` are initializers (scalars and sizes read on the host).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

R = np.random.default_rng(36)


def f(*shape: int) -> np.ndarray:
    return R.standard_normal(shape).astype(np.float32)


def i64(*values: Any) -> np.ndarray:
    return np.array(values, dtype=np.int64)


def labels(*shape: int, classes: int) -> np.ndarray:
    return R.integers(0, classes, shape).astype(np.int64)


def boxes(batch: int, n: int) -> np.ndarray:
    corner = R.random((batch, n, 2)) * 8
    size = R.random((batch, n, 2)) * 4 + 1
    return np.concatenate([corner, corner + size], -1).astype(np.float32)


@dataclass
class Row:
    id: str
    op: str
    inputs: list[Any]
    attrs: dict[str, Any] = field(default_factory=dict)
    opset: int = 23
    consts: tuple[int, ...] = ()
    outputs: list[str] = field(default_factory=lambda: ["y"])
    ref: str = "ort"  # "ort": onnxruntime; "onnx": onnx.reference.ReferenceEvaluator
    rtol: float = 1e-4
    atol: float = 1e-5


def _rope(b: int, s: int, half: int) -> tuple[np.ndarray, np.ndarray]:
    angle = R.random((b, s, half)).astype(np.float32) * 6
    return np.cos(angle), np.sin(angle)


COS, SIN = _rope(2, 5, 4)
TABLE_COS, TABLE_SIN = _rope(1, 16, 3)
Q4, K4, V4 = f(2, 4, 5, 8), f(2, 4, 7, 8), f(2, 4, 7, 6)
QKV_OUT = ["y", "", "", "qk"]

ROWS: list[Row] = [
    # ---------------------------------------------------------------- Attention (opset 23)
    Row("attention-4d", "Attention", [Q4, K4, V4]),
    Row("attention-4d-scale", "Attention", [Q4, K4, V4], {"scale": 0.3}),
    Row("attention-4d-causal", "Attention", [Q4, f(2, 4, 5, 8), f(2, 4, 5, 6)], {"is_causal": 1}),
    Row("attention-gqa-causal", "Attention", [f(2, 6, 5, 8), f(2, 2, 5, 8), f(2, 2, 5, 8)], {"is_causal": 1}),
    Row("attention-float-mask", "Attention", [Q4, K4, V4, f(5, 7)]),
    Row("attention-bool-mask", "Attention", [Q4, K4, V4, R.random((2, 1, 5, 7)) > 0.3]),
    Row(
        "attention-3d-gqa",
        "Attention",
        [f(2, 5, 32), f(2, 7, 16), f(2, 7, 12)],
        {"q_num_heads": 4, "kv_num_heads": 2},
    ),
    Row(
        "attention-past-present",
        "Attention",
        [Q4, K4, V4, f(5, 10), f(2, 4, 3, 8), f(2, 4, 3, 6)],
        outputs=["y", "present_key", "present_value"],
    ),
    Row("attention-softcap", "Attention", [Q4, K4, V4, f(5, 7)], {"softcap": 1.5}),
    Row("attention-qk-raw", "Attention", [Q4, K4, V4], outputs=QKV_OUT),
    Row(
        "attention-qk-bias", "Attention", [Q4, K4, V4, f(5, 7)], {"qk_matmul_output_mode": 2}, outputs=QKV_OUT
    ),
    Row(
        "attention-qk-softmax",
        "Attention",
        [Q4, K4, V4, f(5, 7)],
        {"qk_matmul_output_mode": 3},
        outputs=QKV_OUT,
    ),
    # ---------------------------------------------------------------- RMSNormalization, RotaryEmbedding
    Row("rms-norm-last", "RMSNormalization", [f(2, 5, 8), f(8)]),
    Row("rms-norm-axis1", "RMSNormalization", [f(2, 3, 4, 5), f(3, 4, 5)], {"axis": 1, "epsilon": 1e-3}),
    Row("rotary-4d", "RotaryEmbedding", [f(2, 3, 5, 8), COS, SIN]),
    Row("rotary-4d-interleaved", "RotaryEmbedding", [f(2, 3, 5, 8), COS, SIN], {"interleaved": 1}),
    Row(
        "rotary-3d-partial-positions",
        "RotaryEmbedding",
        [f(2, 5, 20), TABLE_COS[0], TABLE_SIN[0], labels(2, 5, classes=16)],
        {"num_heads": 2, "rotary_embedding_dim": 6},
    ),
    # ---------------------------------------------------------------- losses (opset 13)
    *[
        Row(
            f"sce-{red}{'-w' if w else ''}{'-ignore' if ig else ''}",
            "SoftmaxCrossEntropyLoss",
            [f(4, 5, 3), labels(4, 3, classes=5), f(5) ** 2 if w else None],
            {"reduction": red, **({"ignore_index": 2} if ig else {})},
            opset=13,
            outputs=["y", "log_prob"],
        )
        for red in ("mean", "sum", "none")
        for w, ig in ((False, False), (True, False), (True, True), (False, True))
    ],
    *[
        Row(
            f"nll-{red}",
            "NegativeLogLikelihoodLoss",
            [f(3, 4, 2, 2), labels(3, 2, 2, classes=4), f(4) ** 2],
            {"reduction": red, "ignore_index": 1},
            opset=13,
        )
        for red in ("mean", "sum", "none")
    ],
    # ---------------------------------------------------------------- pools
    Row(
        "avgpool-2d-dilated",
        "AveragePool",
        [f(1, 2, 9, 8)],
        {"kernel_shape": [3, 2], "dilations": [2, 3], "pads": [1, 0, 2, 1], "strides": [2, 1]},
        opset=19,
    ),
    Row(
        "avgpool-2d-dilated-include-ceil",
        "AveragePool",
        [f(1, 2, 9, 8)],
        {
            "kernel_shape": [2, 2],
            "dilations": [2, 2],
            "count_include_pad": 1,
            "ceil_mode": 1,
            "strides": [2, 2],
        },
        opset=19,
    ),
    Row(
        "avgpool-3d-dilated",
        "AveragePool",
        [f(1, 2, 6, 7, 6)],
        {"kernel_shape": [2, 2, 2], "dilations": [2, 1, 2], "pads": [1, 1, 0, 1, 0, 1]},
        opset=19,
    ),
    Row(
        "maxpool-3d-dilated",
        "MaxPool",
        [f(1, 2, 6, 7, 6)],
        {"kernel_shape": [2, 3, 2], "dilations": [2, 1, 2], "pads": [1, 1, 0, 1, 0, 1], "strides": [1, 2, 1]},
        opset=12,
    ),
    # ---------------------------------------------------------------- Resize antialias, GridSample
    *[
        Row(
            f"resize-antialias-{mode}",
            "Resize",
            [f(1, 2, 12, 10), None, None, i64(1, 2, 5, 4)],
            {"mode": mode, "antialias": 1},
            opset=18,
            consts=(3,),
            atol=1e-4,
        )
        for mode in ("linear", "cubic")
    ],
    *[
        Row(
            f"gridsample-{mode}-{pad}{'-align' if align else ''}",
            "GridSample",
            [f(2, 3, 5, 6), (R.random((2, 4, 7, 2)) * 2.4 - 1.2).astype(np.float32)],
            {"mode": mode, "padding_mode": pad, "align_corners": align},
            opset=20,
            # cubic taps at the border: onnxruntime clamps every point, the ONNX reference only those
            # outside the sampled extent (the official cases follow the reference)
            ref="onnx" if (mode, pad) == ("cubic", "border") else "ort",
        )
        for mode in ("cubic", "linear")
        for pad, align in (("zeros", 0), ("border", 1), ("reflection", 0))
    ],
    *[
        Row(
            f"gridsample-5d-{mode}",
            "GridSample",
            [f(1, 2, 4, 5, 3), (R.random((1, 3, 2, 4, 3)) * 2.2 - 1.1).astype(np.float32)],
            {"mode": mode},
            opset=20,
            ref="onnx",
        )
        for mode in ("linear", "nearest")
    ],
    # ---------------------------------------------------------------- signal
    Row("dft-real", "DFT", [f(2, 12, 3, 1), None, i64(1).reshape(())], opset=20, consts=(2,), atol=1e-4),
    Row(
        "dft-complex-inverse-len",
        "DFT",
        [f(2, 9, 2), i64(12).reshape(()), i64(1).reshape(())],
        {"inverse": 1},
        opset=20,
        consts=(1, 2),
        atol=1e-4,
    ),
    Row("dft-onesided", "DFT", [f(3, 10, 1), None, i64(1).reshape(())], {"onesided": 1}, 20, (2,), atol=1e-4),
    Row(
        "stft-window",
        "STFT",
        [f(2, 40, 1), i64(6).reshape(()), np.hanning(10).astype(np.float32)],
        opset=17,
        consts=(1,),
        atol=1e-4,
    ),
    *[
        Row(f"{w.lower()}", w, [i64(11).reshape(())], {"periodic": p}, 17, (0,), ref="onnx")
        for w, p in (("HannWindow", 1), ("HammingWindow", 0), ("BlackmanWindow", 1))
    ],
    Row(
        "mel-weight-matrix",
        "MelWeightMatrix",
        [
            i64(6).reshape(()),
            i64(32).reshape(()),
            i64(16000).reshape(()),
            np.float32(50.0),
            np.float32(7000.0),
        ],
        opset=17,
        consts=(0, 1, 2, 3, 4),
        ref="onnx",
    ),
    # ---------------------------------------------------------------- detection, bits, stateful blocks
    Row(
        "nms",
        "NonMaxSuppression",
        [boxes(2, 12), R.random((2, 3, 12)).astype(np.float32), i64(4), np.float32([0.3]), np.float32([0.2])],
        opset=11,
        consts=(2, 3, 4),
    ),
    Row("bitcast-f32-i32", "BitCast", [f(3, 4)], {"to": 6}, opset=26, ref="onnx"),
    Row(
        "linear-attention-gated-delta",
        "LinearAttention",
        [f(2, 6, 16), f(2, 6, 8), f(2, 6, 12), f(2, 2, 4, 6), -np.abs(f(2, 6, 2)), np.abs(f(2, 6, 2)) / 3],
        {"q_num_heads": 4, "kv_num_heads": 2},
        opset=27,
        outputs=["y", "state"],
        ref="onnx",
    ),
    Row(
        "causal-conv-silu-past",
        "CausalConvWithState",
        [f(2, 3, 7), f(3, 1, 3), f(3), f(2, 3, 2)],
        {"activation": "silu"},
        opset=27,
        outputs=["y", "state"],
        ref="onnx",
    ),
]
