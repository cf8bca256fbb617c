"""Whole small models with random weights, built with onnx.helper: ResNet-like, MobileNet-like, a
transformer encoder block, recurrent stacks, and an old-opset CNN."""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


class G:
    """A graph under construction: ``g.op("Conv", [x, w], pads=[1, 1, 1, 1])`` returns the output name."""

    def __init__(self, opset: int, seed: int = 0) -> None:
        self.opset = opset
        self.rng = np.random.default_rng(seed)
        self.nodes: list[onnx.NodeProto] = []
        self.inits: dict[str, np.ndarray] = {}
        self.n = 0

    def name(self, prefix: str) -> str:
        self.n += 1
        return f"{prefix}_{self.n}"

    def w(self, *shape: int, scale: float = 0.3, name: str = "w") -> str:
        n = self.name(name)
        self.inits[n] = (self.rng.standard_normal(shape) * scale).astype(np.float32)
        return n

    def const(self, value: object, dtype: object = np.int64) -> str:
        n = self.name("c")
        self.inits[n] = np.asarray(value, dtype=dtype)
        return n

    def op(self, op_type: str, inputs: list[str], outputs: int = 1, **attrs: object) -> str:
        outs = [self.name(op_type.lower()) for _ in range(outputs)]
        self.nodes.append(helper.make_node(op_type, inputs, outs, name=self.name(op_type), **attrs))
        return outs[0] if outputs == 1 else outs  # type: ignore[return-value]

    def model(self, inputs: list[onnx.ValueInfoProto], outputs: list[str]) -> bytes:
        if self.opset < 9:  # IR v3 lists every initializer as a graph input too
            inputs = inputs + [
                helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(a.dtype), list(a.shape))
                for n, a in self.inits.items()
            ]
        graph = helper.make_graph(
            self.nodes,
            "model",
            inputs,
            [helper.make_empty_tensor_value_info(o) for o in outputs],
            [numpy_helper.from_array(a, n) for n, a in self.inits.items()],
        )
        m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", self.opset)])
        m.ir_version = 8 if self.opset <= 15 else 9
        if self.opset < 9:
            m.ir_version = 3
        return m.SerializeToString()

    # -------------------------------------------------------------- blocks
    def conv_bn(self, x: str, cin: int, cout: int, k: int = 3, stride: int = 1, group: int = 1) -> str:
        y = self.op(
            "Conv",
            [x, self.w(cout, cin // group, k, k)],
            pads=[k // 2] * 4,
            strides=[stride] * 2,
            group=group,
        )
        scale = self.const(self.rng.random(cout) + 0.5, np.float32)
        bias = self.const(self.rng.standard_normal(cout) * 0.1, np.float32)
        mean = self.const(self.rng.standard_normal(cout) * 0.1, np.float32)
        var = self.const(self.rng.random(cout) + 0.5, np.float32)
        return self.op("BatchNormalization", [y, scale, bias, mean, var], epsilon=1e-5)

    def hard_swish(self, x: str) -> str:
        if self.opset >= 14:
            return self.op("HardSwish", [x])
        three, zero, six = (
            self.const(3.0, np.float32),
            self.const(0.0, np.float32),
            self.const(6.0, np.float32),
        )
        clipped = self.op("Clip", [self.op("Add", [x, three]), zero, six])
        return self.op("Div", [self.op("Mul", [x, clipped]), six])

    def layer_norm(self, x: str, d: int) -> str:
        scale, bias = (
            self.const(self.rng.random(d) + 0.5, np.float32),
            self.const(self.rng.standard_normal(d) * 0.1, np.float32),
        )
        if self.opset >= 17:
            return self.op("LayerNormalization", [x, scale, bias], axis=-1, epsilon=1e-5)
        mean = self.op("ReduceMean", [x], axes=[-1])
        centred = self.op("Sub", [x, mean])
        var = self.op("ReduceMean", [self.op("Pow", [centred, self.const(2.0, np.float32)])], axes=[-1])
        std = self.op("Sqrt", [self.op("Add", [var, self.const(1e-5, np.float32)])])
        return self.op("Add", [self.op("Mul", [self.op("Div", [centred, std]), scale]), bias])

    def gelu(self, x: str) -> str:
        if self.opset >= 20:
            return self.op("Gelu", [x])
        inner = self.op("Erf", [self.op("Div", [x, self.const(np.sqrt(2.0), np.float32)])])
        return self.op(
            "Mul",
            [
                self.op("Mul", [x, self.op("Add", [inner, self.const(1.0, np.float32)])]),
                self.const(0.5, np.float32),
            ],
        )


def resnet(opset: int) -> bytes:
    g = G(opset, 1)
    x = g.op("Relu", [g.conv_bn("x", 3, 8)])
    x = g.op("MaxPool", [x], kernel_shape=[2, 2], strides=[2, 2])
    skip = x
    y = g.op("Relu", [g.conv_bn(x, 8, 8)])
    y = g.conv_bn(y, 8, 8)
    x = g.op("Relu", [g.op("Add", [y, skip])])
    down = g.conv_bn(x, 8, 16, k=1, stride=2)
    y = g.op("Relu", [g.conv_bn(x, 8, 16, stride=2)])
    y = g.conv_bn(y, 16, 16)
    x = g.op("Relu", [g.op("Add", [y, down])])
    x = g.op("Flatten", [g.op("GlobalAveragePool", [x])])
    logits = g.op("Gemm", [x, g.w(10, 16), g.w(10)], transB=1)
    probs = g.op("Softmax", [logits], axis=-1 if opset >= 13 else 1)
    return g.model([helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3, 16, 16])], [logits, probs])


def mobilenet(opset: int) -> bytes:
    g = G(opset, 2)
    stem = g.hard_swish(g.conv_bn("x", 3, 8, stride=2))
    y = g.hard_swish(g.conv_bn(stem, 8, 16, k=1))
    y = g.hard_swish(g.conv_bn(y, 16, 16, k=3, group=16))  # depthwise
    se = g.op("GlobalAveragePool", [y])
    se = g.op("Relu", [g.op("Conv", [se, g.w(4, 16, 1, 1), g.w(4)])])
    se = g.op("HardSigmoid", [g.op("Conv", [se, g.w(16, 4, 1, 1), g.w(16)])], alpha=1 / 6, beta=0.5)
    y = g.op("Mul", [y, se])
    y = g.conv_bn(y, 16, 8, k=1)
    out = g.op("Add", [y, stem])
    return g.model([helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3, 16, 16])], [out])


def transformer(opset: int, vocab: int = 20, d: int = 16, heads: int = 2, seq: int = 6) -> bytes:
    g = G(opset, 3)
    dh = d // heads
    emb = g.op("Gather", [g.w(vocab, d, scale=1.0, name="embedding"), "tokens"])
    pos = g.op(
        "Slice",
        [
            g.w(16, d, name="positions"),
            g.const([0]),
            g.op("Gather", [g.op("Shape", ["tokens"]), g.const([1])]),
            g.const([0]),
        ],
    )
    x = g.op("Add", [emb, pos])
    h = g.layer_norm(x, d)
    shape = g.op("Shape", [h])
    batch = g.op("Gather", [shape, g.const(0)], axis=0)
    length = g.op("Gather", [shape, g.const(1)], axis=0)
    unsq = (
        (lambda v: g.op("Unsqueeze", [v, g.const([0])]))
        if opset >= 13
        else (lambda v: g.op("Unsqueeze", [v], axes=[0]))
    )
    split_shape = g.op("Concat", [unsq(batch), unsq(length), g.const([heads]), g.const([dh])], axis=0)

    def heads_of(w: str, b: str) -> str:
        y = g.op("Add", [g.op("MatMul", [h, w]), b])
        return g.op("Transpose", [g.op("Reshape", [y, split_shape])], perm=[0, 2, 1, 3])

    q, k, v = (heads_of(g.w(d, d), g.w(d, scale=0.1)) for _ in range(3))
    scores = g.op(
        "Div",
        [g.op("MatMul", [q, g.op("Transpose", [k], perm=[0, 1, 3, 2])]), g.const(np.sqrt(dh), np.float32)],
    )
    # padding mask from int64 attention_mask (B, S): 0 -> -1e9
    keep = g.op("Cast", ["attention_mask"], to=TensorProto.FLOAT)
    pad_bias = g.op("Mul", [g.op("Sub", [g.const(1.0, np.float32), keep]), g.const(-1e9, np.float32)])
    pad_bias = (
        g.op("Unsqueeze", [pad_bias, g.const([1, 2])])
        if opset >= 13
        else g.op("Unsqueeze", [pad_bias], axes=[1, 2])
    )
    # causal mask: Trilu over ConstantOfShape((S, S)) -> Where
    square = g.op("Concat", [unsq(length), unsq(length)], axis=0)
    ones = g.op("ConstantOfShape", [square], value=numpy_helper.from_array(np.array([1], np.int64)))
    lower = g.op("Trilu", [ones], upper=0) if opset >= 14 else ones
    causal = g.op(
        "Where", [g.op("Equal", [lower, g.const(0)]), g.const(-1e9, np.float32), g.const(0.0, np.float32)]
    )
    scores = g.op("Add", [g.op("Add", [scores, pad_bias]), causal])
    attn = g.op("MatMul", [g.op("Softmax", [scores], axis=-1 if opset >= 13 else 3), v])
    merged = g.op("Reshape", [g.op("Transpose", [attn], perm=[0, 2, 1, 3]), g.const([0, 0, d])])
    x = g.op("Add", [x, g.op("Add", [g.op("MatMul", [merged, g.w(d, d)]), g.w(d, scale=0.1)])])
    h = g.layer_norm(x, d)
    ff = g.gelu(g.op("Add", [g.op("MatMul", [h, g.w(d, 4 * d)]), g.w(4 * d, scale=0.1)]))
    x = g.op("Add", [x, g.op("MatMul", [ff, g.w(4 * d, d)])])
    pooled = (
        g.op("ReduceMean", [x], axes=[1], keepdims=0)
        if opset < 18
        else g.op("ReduceMean", [x, g.const([1])], keepdims=0)
    )
    return g.model(
        [
            helper.make_tensor_value_info("tokens", TensorProto.INT64, ["batch", "seq"]),
            helper.make_tensor_value_info("attention_mask", TensorProto.INT64, ["batch", "seq"]),
        ],
        [x, pooled],
    )


def recurrent(opset: int, seq: int = 5, feat: int = 4, hidden: int = 3) -> bytes:
    g = G(opset, 4)
    y, yh, yc = g.op(
        "LSTM",
        ["x", g.w(2, 4 * hidden, feat), g.w(2, 4 * hidden, hidden), g.w(2, 8 * hidden, scale=0.1)],
        outputs=3,
        hidden_size=hidden,
        direction="bidirectional",
    )
    y = g.op("Reshape", [g.op("Transpose", [y], perm=[0, 2, 1, 3]), g.const([0, 0, 2 * hidden])])
    gy, gh = g.op(
        "GRU",
        [
            y,
            g.w(1, 3 * hidden, 2 * hidden),
            g.w(1, 3 * hidden, hidden),
            g.w(1, 6 * hidden, scale=0.1),
            "",
            g.op("Squeeze", [g.op("Slice", [yh, g.const([0]), g.const([1]), g.const([0])])], axes=[0])
            if opset < 13
            else g.op("Slice", [yh, g.const([0]), g.const([1]), g.const([0])]),
        ],
        outputs=2,
        hidden_size=hidden,
        linear_before_reset=1,
    )
    ry, rh = g.op(
        "RNN",
        [
            gy.replace(
                gy, g.op("Squeeze", [gy, g.const([1])]) if opset >= 13 else g.op("Squeeze", [gy], axes=[1])
            ),
            g.w(1, hidden, hidden),
            g.w(1, hidden, hidden),
        ],
        outputs=2,
        hidden_size=hidden,
        direction="reverse",
    )
    return g.model(
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [seq, "batch", feat])], [y, yh, yc, gh, ry, rh]
    )


def old_cnn(opset: int, upsample: bool = True) -> bytes:
    """Opset 6-9 forms: BatchNormalization with consumed attrs gone, Upsample, Gemm with broadcast,
    Reshape with a shape initializer, legacy-broadcast Add at opset 6."""
    g = G(opset, 5)
    x = g.op("Relu", [g.conv_bn("x", 3, 4)])
    x = g.op("MaxPool", [x], kernel_shape=[2, 2], strides=[2, 2])
    if not upsample:
        pass
    elif opset >= 9:
        x = g.op("Upsample", [x, g.const([1, 1, 2, 2], np.float32)], mode="nearest")
    elif opset >= 7:
        x = g.op("Upsample", [x], scales=[1.0, 1.0, 2.0, 2.0], mode="nearest")
    x = g.op("AveragePool", [x], kernel_shape=[2, 2], strides=[2, 2])
    x = g.op("Reshape", [x, g.const([0, -1])])
    y = g.op("Gemm", [x, g.w(64 if upsample else 16, 5), g.w(5)], **({"broadcast": 1} if opset < 7 else {}))
    y = g.op("Sigmoid", [y])
    y = g.op("Add", [y, g.w(5)], **({"broadcast": 1} if opset < 7 else {}))
    return g.model([helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 8, 8])], [y])
