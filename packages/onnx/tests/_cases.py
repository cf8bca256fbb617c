"""The node-level conformance table: one row per op and attribute form, run against onnxruntime.

A row names the op, its inputs (``None`` = omitted optional input), attributes, opset, which inputs are
initializers (shapes, axes, sizes: read on the host) and the tolerance. Adding a case = one row.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
from onnx import numpy_helper

R = np.random.default_rng(1234)


def f(*shape: int) -> np.ndarray:
    return R.standard_normal(shape).astype(np.float32)


def pos(*shape: int) -> np.ndarray:
    return (R.random(shape) + 0.5).astype(np.float32)


def unit(*shape: int) -> np.ndarray:
    return (R.random(shape) * 1.8 - 0.9).astype(np.float32)


def i64(*values: Any) -> np.ndarray:
    return np.array(values, dtype=np.int64)


def ints(*shape: int, lo: int = -5, hi: int = 6) -> np.ndarray:
    return R.integers(lo, hi, shape).astype(np.int64)


def nz_ints(*shape: int) -> np.ndarray:
    v = ints(*shape)
    return np.where(v == 0, 3, v).astype(np.int64)


def b(*shape: int) -> np.ndarray:
    return R.random(shape) > 0.5


@dataclass
class Case:
    id: str
    op: str
    inputs: list[Any]
    attrs: dict[str, Any] = field(default_factory=dict)
    opset: int = 17
    consts: tuple[int, ...] = ()
    outputs: int = 1
    rtol: float = 1e-4
    atol: float = 1e-5
    expect: Any = None  # numpy reference (inputs -> outputs) where onnxruntime has no kernel


def C(id: str, op: str, inputs: list[Any], **kw: Any) -> Case:
    return Case(id, op, inputs, **kw)


X = f(2, 3, 4)
IMG = f(2, 3, 6, 6)

CASES: list[Case] = [
    # ---------------------------------------------------------------- element-wise unary
    *[
        C(op, op, [f(2, 3, 4)])
        for op in (
            "Abs",
            "Neg",
            "Sign",
            "Relu",
            "Exp",
            "Sin",
            "Cos",
            "Tan",
            "Atan",
            "Sinh",
            "Cosh",
            "Tanh",
            "Asinh",
            "Sigmoid",
            "Erf",
            "Floor",
            "Ceil",
            "Softsign",
            "Softplus",
            "Identity",
            "HardSwish",
            "Reciprocal",
        )
    ],
    C("Mish", "Mish", [f(2, 3, 4)], opset=18),
    C("Round-halves", "Round", [np.array([0.5, 1.5, 2.5, -0.5, -1.5, 1.2, -2.7], np.float32)]),
    *[C(op, op, [pos(2, 3)]) for op in ("Log", "Sqrt")],
    *[C(op, op, [unit(2, 3)]) for op in ("Asin", "Acos", "Atanh")],
    C("Acosh", "Acosh", [pos(2, 3) + 1.0]),
    C("Abs-int", "Abs", [ints(5)]),
    C("Neg-int", "Neg", [ints(5)]),
    C("Relu-int", "Relu", [ints(6)], opset=14, expect=lambda x: [np.maximum(x, 0)]),
    C("Not", "Not", [b(3, 4)]),
    C("IsNaN", "IsNaN", [np.array([1.0, np.nan, np.inf], np.float32)]),
    C("IsInf", "IsInf", [np.array([1.0, np.nan, np.inf, -np.inf], np.float32)]),
    C("IsInf-pos", "IsInf", [np.array([1.0, np.inf, -np.inf], np.float32)], attrs={"detect_negative": 0}),
    C("IsInf-neg", "IsInf", [np.array([1.0, np.inf, -np.inf], np.float32)], attrs={"detect_positive": 0}),
    C("LeakyRelu", "LeakyRelu", [f(3, 4)], attrs={"alpha": 0.2}),
    C("Elu", "Elu", [f(3, 4)], attrs={"alpha": 0.7}),
    C("Celu", "Celu", [f(3, 4)], attrs={"alpha": 1.5}),
    C("Selu", "Selu", [f(3, 4)]),
    C("HardSigmoid", "HardSigmoid", [f(3, 4)], attrs={"alpha": 0.3, "beta": 0.4}),
    C("ThresholdedRelu", "ThresholdedRelu", [f(3, 4)], attrs={"alpha": 0.3}),
    C("Shrink", "Shrink", [f(3, 4)], attrs={"bias": 0.2, "lambd": 0.4}),
    C("Gelu", "Gelu", [f(3, 4)], opset=20),
    C("Gelu-tanh", "Gelu", [f(3, 4)], attrs={"approximate": "tanh"}, opset=20),
    C("PRelu", "PRelu", [f(2, 3, 4, 4), f(3, 1, 1)]),
    C("PRelu-scalar", "PRelu", [f(2, 3), np.array([0.25], np.float32)]),
    # PRelu-6 predates broadcasting: a (C,) slope is one value per channel (onnxruntime starts at 7)
    C(
        "PRelu-opset6-per-channel",
        "PRelu",
        [f(2, 3, 5), np.array([0.1, 0.2, 0.3], np.float32)],
        opset=6,
        expect=lambda x, s: [np.where(x < 0, x * s.reshape(3, 1), x)],
    ),
    # ---------------------------------------------------------------- binary and variadic
    *[C(op, op, [f(2, 3, 4), f(3, 1)]) for op in ("Add", "Sub", "Mul", "Div")],
    C("Add-int", "Add", [ints(2, 3), ints(3)]),
    C("Div-int-trunc", "Div", [ints(12), nz_ints(12)]),
    C(
        "Add-legacy-broadcast",
        "Add",
        [f(2, 3, 4), f(3)],
        attrs={"broadcast": 1, "axis": 1},
        opset=6,
        expect=lambda a, b: [a + b[:, None]],
    ),
    C(
        "Mul-legacy-suffix",
        "Mul",
        [f(2, 3, 4), f(4)],
        attrs={"broadcast": 1},
        opset=6,
        expect=lambda a, b: [a * b],
    ),
    C("Pow", "Pow", [pos(3, 4), f(3, 4)]),
    C("Pow-square-const", "Pow", [f(3, 4), np.array(2.0, np.float32)], consts=(1,)),
    C("Pow-int-exp", "Pow", [pos(3, 4), i64(3)], consts=(1,)),
    C("Mod-int", "Mod", [ints(10), nz_ints(10)]),
    C("Mod-fmod", "Mod", [f(10), pos(10)], attrs={"fmod": 1}),
    C("Mod-fmod-int", "Mod", [ints(10), nz_ints(10)], attrs={"fmod": 1}),
    *[C(op, op, [f(3, 4), f(4)]) for op in ("Equal", "Greater", "GreaterOrEqual", "Less", "LessOrEqual")],
    C("Equal-int", "Equal", [ints(3, 4, lo=0, hi=3), ints(4, lo=0, hi=3)]),
    *[C(op, op, [b(3, 4), b(4)]) for op in ("And", "Or", "Xor")],
    C(
        "BitShift-left",
        "BitShift",
        [np.array([1, 2, 3], np.uint8), np.array([1, 2, 3], np.uint8)],
        attrs={"direction": "LEFT"},
    ),
    C(
        "BitShift-right",
        "BitShift",
        [np.array([16, 64, 200], np.uint8), np.array([1, 2, 3], np.uint8)],
        attrs={"direction": "RIGHT"},
    ),
    C("Max", "Max", [f(3, 4), f(4), f(3, 1)]),
    C("Min", "Min", [f(3, 4), f(4)]),
    C("Sum", "Sum", [f(3, 4), f(4), f(3, 4)]),
    C("Mean", "Mean", [f(3, 4), f(4)]),
    C("Clip-inputs", "Clip", [f(3, 4), np.array(-0.5, np.float32), np.array(0.5, np.float32)], consts=(1, 2)),
    C("Clip-min-only", "Clip", [f(3, 4), np.array(-0.5, np.float32)], consts=(1,)),
    C("Clip-max-omitted", "Clip", [f(3, 4), None, np.array(0.1, np.float32)], consts=(2,)),
    C("Clip-attrs", "Clip", [f(3, 4)], attrs={"min": -0.2, "max": 0.3}, opset=6),
    C("Clip-int", "Clip", [ints(8), i64(-2), i64(3)], consts=(1, 2), opset=13),
    C("Softmax", "Softmax", [f(2, 3, 4)]),
    C("Softmax-axis1", "Softmax", [f(2, 3, 4)], attrs={"axis": 1}),
    C("Softmax-opset11-coerced", "Softmax", [f(2, 3, 4)], attrs={"axis": 1}, opset=11),
    C("Softmax-opset6-default", "Softmax", [f(2, 3, 4)], opset=6),
    C("LogSoftmax", "LogSoftmax", [f(2, 3, 4)], attrs={"axis": 0}),
    C("LogSoftmax-opset9", "LogSoftmax", [f(2, 3, 4)], opset=9),
    C("Hardmax", "Hardmax", [f(2, 3, 4)]),
    C("Hardmax-opset11", "Hardmax", [f(2, 3, 4)], attrs={"axis": 1}, opset=11),
    # ---------------------------------------------------------------- reductions
    *[
        C(f"{op}-axes", op, [f(2, 3, 4), i64(1, -1)], consts=(1,), opset=18)
        for op in (
            "ReduceSum",
            "ReduceMean",
            "ReduceMax",
            "ReduceMin",
            "ReduceProd",
            "ReduceL1",
            "ReduceL2",
            "ReduceLogSumExp",
            "ReduceSumSquare",
        )
    ],
    C("ReduceLogSum", "ReduceLogSum", [pos(2, 3, 4), i64(2)], consts=(1,), opset=18),
    C("ReduceMean-attr-opset13", "ReduceMean", [f(2, 3, 4)], attrs={"axes": [1], "keepdims": 0}, opset=13),
    C(
        "ReduceSum-opset13-input",
        "ReduceSum",
        [f(2, 3, 4), i64(0, 2)],
        attrs={"keepdims": 0},
        consts=(1,),
        opset=13,
    ),
    C("ReduceSum-opset11-attr", "ReduceSum", [f(2, 3, 4)], attrs={"axes": [2]}, opset=11),
    C("ReduceSum-all", "ReduceSum", [f(2, 3, 4)]),
    C("ReduceSum-noop", "ReduceSum", [f(2, 3)], attrs={"noop_with_empty_axes": 1}),
    C("ReduceMax-int", "ReduceMax", [ints(3, 4), i64(1)], consts=(1,), opset=18),
    C("ReduceMean-opset6", "ReduceMean", [f(2, 3, 4)], attrs={"axes": [-1]}, opset=6),
    C("ArgMax", "ArgMax", [f(3, 4)], attrs={"axis": 1}),
    C("ArgMin-nokeep", "ArgMin", [f(3, 4)], attrs={"axis": 0, "keepdims": 0}),
    C(
        "ArgMax-last",
        "ArgMax",
        [np.array([[1, 3, 3], [2, 2, 0]], np.float32)],
        attrs={"axis": 1, "select_last_index": 1},
    ),
    C("CumSum", "CumSum", [f(3, 4), i64(1)], consts=(1,)),
    C(
        "CumSum-exclusive-reverse",
        "CumSum",
        [f(3, 4), i64(0)],
        attrs={"exclusive": 1, "reverse": 1},
        consts=(1,),
    ),
    C("TopK", "TopK", [f(3, 6), i64(2)], consts=(1,), outputs=2),
    C(
        "TopK-smallest-axis0",
        "TopK",
        [f(5, 3), i64(3)],
        attrs={"axis": 0, "largest": 0},
        consts=(1,),
        outputs=2,
    ),
    C("TopK-opset9", "TopK", [f(3, 6)], attrs={"k": 2}, opset=9, outputs=2),
    # ---------------------------------------------------------------- shape and layout
    C("Reshape", "Reshape", [f(2, 3, 4), i64(4, -1)], consts=(1,)),
    C("Reshape-zero", "Reshape", [f(2, 3, 4), i64(0, 0, 2, 2)], consts=(1,)),
    C("Reshape-runtime-shape", "Reshape", [f(2, 3, 4), i64(3, 8)]),
    C("Flatten", "Flatten", [f(2, 3, 4, 5)]),
    C("Flatten-axis0", "Flatten", [f(2, 3, 4)], attrs={"axis": 0}),
    C("Flatten-neg", "Flatten", [f(2, 3, 4)], attrs={"axis": -1}),
    C("Transpose", "Transpose", [f(2, 3, 4)], attrs={"perm": [1, 2, 0]}),
    C("Transpose-default", "Transpose", [f(2, 3, 4)]),
    C("Squeeze", "Squeeze", [f(2, 1, 4, 1), i64(1)], consts=(1,)),
    C("Squeeze-all", "Squeeze", [f(1, 3, 1)]),
    C("Squeeze-opset11", "Squeeze", [f(2, 1, 4, 1)], attrs={"axes": [-1]}, opset=11),
    C("Unsqueeze", "Unsqueeze", [f(2, 3), i64(0, 3)], consts=(1,)),
    C("Unsqueeze-neg", "Unsqueeze", [f(2, 3), i64(-1)], consts=(1,)),
    C("Unsqueeze-opset9", "Unsqueeze", [f(2, 3)], attrs={"axes": [1]}, opset=9),
    C("Concat", "Concat", [f(2, 3), f(2, 2), f(2, 1)], attrs={"axis": 1}),
    C("Concat-neg", "Concat", [f(1, 3), f(2, 3)], attrs={"axis": -2}),
    C("Concat-empty", "Concat", [f(2, 0), f(2, 3)], attrs={"axis": 1}),
    C("Split-equal", "Split", [f(6, 2)], outputs=3),
    C("Split-sizes", "Split", [f(2, 7), i64(3, 4)], attrs={"axis": 1}, consts=(1,), outputs=2),
    C("Split-num-outputs", "Split", [f(7, 2)], attrs={"num_outputs": 3}, opset=18, outputs=3),
    C("Split-opset11-attr", "Split", [f(2, 6)], attrs={"axis": 1, "split": [2, 4]}, opset=11, outputs=2),
    C("Slice", "Slice", [f(5, 6), i64(1, 0), i64(4, 5)], consts=(1, 2)),
    C("Slice-axes-steps", "Slice", [f(5, 6), i64(-1), i64(-100), i64(1), i64(-2)], consts=(1, 2, 3, 4)),
    C("Slice-clamped", "Slice", [f(5, 6), i64(2), i64(2**62), i64(0), i64(2)], consts=(1, 2, 3, 4)),
    C("Slice-reverse-all", "Slice", [f(4, 3), i64(-1), i64(-(2**62)), i64(0), i64(-1)], consts=(1, 2, 3, 4)),
    C("Slice-opset9", "Slice", [f(5, 6)], attrs={"starts": [1], "ends": [-1], "axes": [1]}, opset=9),
    C("Expand", "Expand", [f(3, 1), i64(2, 3, 4)], consts=(1,)),
    C("Expand-ones", "Expand", [f(3, 4), i64(1, 1)], consts=(1,)),
    C("Tile", "Tile", [f(2, 3), i64(2, 2)], consts=(1,)),
    C("Pad-constant", "Pad", [f(2, 3), i64(1, 0, 0, 2), np.array(1.5, np.float32)], consts=(1, 2)),
    C("Pad-reflect", "Pad", [f(3, 4), i64(0, 2, 0, 1)], attrs={"mode": "reflect"}, consts=(1,)),
    C("Pad-edge", "Pad", [f(3, 4), i64(1, 1, 1, 1)], attrs={"mode": "edge"}, consts=(1,)),
    C("Pad-wrap", "Pad", [f(3, 4), i64(0, 2, 0, 3)], attrs={"mode": "wrap"}, opset=19, consts=(1,)),
    C("Pad-negative", "Pad", [f(4, 5), i64(-1, 1, 0, -2)], consts=(1,)),
    C("Pad-axes", "Pad", [f(2, 3, 4), i64(1, 2), None, i64(2)], consts=(1, 3), opset=18),
    C("Pad-opset6-attrs", "Pad", [f(2, 3)], attrs={"pads": [0, 1, 0, 1], "value": 2.0}, opset=6),
    C("Pad-int", "Pad", [ints(2, 3), i64(1, 1, 1, 1)], consts=(1,)),
    C("Shape", "Shape", [f(2, 3, 4)]),
    C("Shape-start-end", "Shape", [f(2, 3, 4, 5)], attrs={"start": 1, "end": -1}),
    C("Size", "Size", [f(2, 3, 4)]),
    C("ConstantOfShape", "ConstantOfShape", [i64(2, 3)], consts=(0,)),
    C(
        "ConstantOfShape-int",
        "ConstantOfShape",
        [i64(3)],
        attrs={"value": numpy_helper.from_array(np.array([7], np.int64))},
        consts=(0,),
    ),
    C(
        "Range",
        "Range",
        [np.array(1, np.int64), np.array(10, np.int64), np.array(3, np.int64)],
        consts=(0, 1, 2),
    ),
    C(
        "Range-float",
        "Range",
        [np.array(0.5, np.float32), np.array(-2.0, np.float32), np.array(-0.75, np.float32)],
        consts=(0, 1, 2),
    ),
    C("EyeLike", "EyeLike", [f(3, 5)], attrs={"k": 1}),
    C("Trilu-upper", "Trilu", [f(2, 4, 5)]),
    C("Trilu-lower-k", "Trilu", [f(4, 5), np.array(-1, np.int64)], attrs={"upper": 0}, consts=(1,)),
    C("DepthToSpace-DCR", "DepthToSpace", [f(1, 8, 2, 3)], attrs={"blocksize": 2}),
    C("DepthToSpace-CRD", "DepthToSpace", [f(1, 8, 2, 3)], attrs={"blocksize": 2, "mode": "CRD"}),
    C("SpaceToDepth", "SpaceToDepth", [f(1, 2, 4, 6)], attrs={"blocksize": 2}),
    C("Cast-float-int", "Cast", [f(3, 4) * 3], attrs={"to": 7}),
    C("Cast-int-float", "Cast", [ints(5)], attrs={"to": 1}),
    C("Cast-bool", "Cast", [np.array([0.0, 1.5, -2.0], np.float32)], attrs={"to": 9}),
    C("Cast-f16", "Cast", [f(3)], attrs={"to": 10}, rtol=1e-3, atol=1e-3),
    C("CastLike", "CastLike", [ints(4), f(1)]),
    C("Dropout", "Dropout", [f(3, 4)]),
    C("Dropout-mask", "Dropout", [f(3, 4)], outputs=2),
    # ---------------------------------------------------------------- indexing
    C("Gather", "Gather", [f(5, 3), i64(0, 4, -1)], consts=(1,)),
    C("Gather-axis1-2d", "Gather", [f(2, 5, 3), np.array([[0, 1], [4, 2]], np.int64)], attrs={"axis": 1}),
    C("Gather-scalar", "Gather", [f(5, 3), np.array(2, np.int64)], consts=(1,)),
    C(
        "GatherElements",
        "GatherElements",
        [f(3, 4), np.array([[0, 3], [1, -1], [2, 0]], np.int64)],
        attrs={"axis": 1},
    ),
    C("GatherND", "GatherND", [f(3, 4, 2), np.array([[0, 1], [2, 3]], np.int64)]),
    C(
        "GatherND-batch",
        "GatherND",
        [f(2, 3, 4), np.array([[[1]], [[2]]], np.int64)],
        attrs={"batch_dims": 1},
    ),
    C(
        "ScatterElements",
        "ScatterElements",
        [f(3, 4), np.array([[1, 0], [3, 2], [0, 1]], np.int64), f(3, 2)],
        attrs={"axis": 1},
    ),
    C(
        "ScatterElements-add",
        "ScatterElements",
        [f(3, 4), np.array([[1, 1], [3, 2], [0, 1]], np.int64), f(3, 2)],
        attrs={"axis": 1, "reduction": "add"},
    ),
    C(
        "ScatterElements-max",
        "ScatterElements",
        [f(3, 4), np.array([[1, 1], [3, 2], [0, 1]], np.int64), f(3, 2)],
        attrs={"axis": 1, "reduction": "max"},
        opset=18,
    ),
    C("ScatterND", "ScatterND", [f(4, 3), np.array([[1], [3]], np.int64), f(2, 3)]),
    C(
        "ScatterND-add",
        "ScatterND",
        [f(4, 3), np.array([[1, 2], [1, 2]], np.int64), f(2)],
        attrs={"reduction": "add"},
    ),
    C("Where", "Where", [b(3, 4), f(3, 4), f(4)]),
    C("Where-int", "Where", [b(3), ints(3), ints(1)]),
    C(
        "OneHot",
        "OneHot",
        [np.array([0, 2, -1], np.int64), np.array(4, np.int64), np.array([0.0, 1.0], np.float32)],
        consts=(1, 2),
    ),
    C(
        "OneHot-axis0",
        "OneHot",
        [np.array([[1, 0]], np.int64), np.array(3, np.int64), np.array([-1, 5], np.int64)],
        attrs={"axis": 0},
        consts=(1, 2),
    ),
    C("NonZero", "NonZero", [np.array([[1.0, 0.0], [0.0, 2.0]], np.float32)]),
    C("Compress", "Compress", [f(3, 4), np.array([True, False, True])], attrs={"axis": 0}),
    # ---------------------------------------------------------------- nn
    C("Conv", "Conv", [IMG, f(4, 3, 3, 3), f(4)], attrs={"pads": [1, 1, 1, 1]}),
    C(
        "Conv-stride-dilation",
        "Conv",
        [f(1, 2, 9, 9), f(3, 2, 3, 3)],
        attrs={"strides": [2, 2], "dilations": [2, 1]},
    ),
    C("Conv-asym-pads", "Conv", [IMG, f(4, 3, 3, 3)], attrs={"pads": [0, 1, 2, 1]}),
    C("Conv-same-upper", "Conv", [IMG, f(4, 3, 2, 2)], attrs={"auto_pad": "SAME_UPPER", "strides": [2, 2]}),
    C("Conv-same-lower", "Conv", [IMG, f(4, 3, 2, 2)], attrs={"auto_pad": "SAME_LOWER"}),
    C("Conv-group-depthwise", "Conv", [IMG, f(3, 1, 3, 3)], attrs={"group": 3, "pads": [1, 1, 1, 1]}),
    C("Conv1d", "Conv", [f(2, 3, 10), f(4, 3, 3), f(4)], attrs={"strides": [2]}),
    C("Conv3d", "Conv", [f(1, 2, 4, 5, 5), f(2, 2, 2, 3, 3)], attrs={"pads": [0, 1, 1, 0, 1, 1]}),
    C("ConvTranspose", "ConvTranspose", [f(1, 3, 4, 4), f(3, 2, 3, 3), f(2)], attrs={"strides": [2, 2]}),
    C(
        "ConvTranspose-pads-outpad",
        "ConvTranspose",
        [f(1, 3, 4, 4), f(3, 2, 3, 3)],
        attrs={"strides": [2, 2], "pads": [1, 1, 1, 1], "output_padding": [1, 1]},
    ),
    C(
        "ConvTranspose-asym",
        "ConvTranspose",
        [f(1, 2, 4, 4), f(2, 2, 3, 3), f(2)],
        attrs={"strides": [2, 2], "pads": [0, 1, 1, 0]},
    ),
    C(
        "ConvTranspose-output-shape",
        "ConvTranspose",
        [f(1, 2, 3, 3), f(2, 3, 3, 3)],
        attrs={"strides": [2, 2], "output_shape": [7, 8]},
    ),
    C(
        "ConvTranspose-same-upper",
        "ConvTranspose",
        [f(1, 2, 3, 3), f(2, 2, 3, 3)],
        attrs={"strides": [2, 2], "auto_pad": "SAME_UPPER"},
    ),
    C("ConvTranspose-group", "ConvTranspose", [f(1, 4, 3, 3), f(4, 1, 2, 2)], attrs={"group": 2}),
    C("ConvTranspose1d", "ConvTranspose", [f(2, 3, 5), f(3, 2, 3)], attrs={"strides": [3]}),
    C("MaxPool", "MaxPool", [IMG], attrs={"kernel_shape": [2, 2], "strides": [2, 2]}),
    C(
        "MaxPool-pads",
        "MaxPool",
        [IMG],
        attrs={"kernel_shape": [3, 3], "pads": [1, 1, 1, 1], "strides": [2, 2]},
    ),
    C(
        "MaxPool-asym-same",
        "MaxPool",
        [f(1, 2, 5, 5)],
        attrs={"kernel_shape": [2, 2], "auto_pad": "SAME_UPPER"},
    ),
    C(
        "MaxPool-ceil",
        "MaxPool",
        [f(1, 2, 7, 7)],
        attrs={"kernel_shape": [3, 3], "strides": [2, 2], "ceil_mode": 1},
    ),
    C("MaxPool-dilation", "MaxPool", [f(1, 2, 7, 7)], attrs={"kernel_shape": [2, 2], "dilations": [2, 2]}),
    C(
        "MaxPool-indices",
        "MaxPool",
        [f(2, 2, 4, 4)],
        attrs={"kernel_shape": [2, 2], "strides": [2, 2]},
        outputs=2,
    ),
    C(
        "MaxPool-indices-asym",
        "MaxPool",
        [f(1, 2, 5, 5)],
        attrs={"kernel_shape": [2, 2], "pads": [1, 0, 0, 1]},
        outputs=2,
    ),
    C("MaxPool1d", "MaxPool", [f(2, 3, 9)], attrs={"kernel_shape": [3], "strides": [2]}),
    C("MaxPool-opset7", "MaxPool", [IMG], attrs={"kernel_shape": [2, 2], "strides": [2, 2]}, opset=7),
    C("AveragePool", "AveragePool", [IMG], attrs={"kernel_shape": [2, 2], "strides": [2, 2]}),
    C("AveragePool-pads-exclude", "AveragePool", [IMG], attrs={"kernel_shape": [3, 3], "pads": [1, 1, 1, 1]}),
    C(
        "AveragePool-pads-include",
        "AveragePool",
        [IMG],
        attrs={"kernel_shape": [3, 3], "pads": [1, 1, 1, 1], "count_include_pad": 1},
    ),
    C(
        "AveragePool-asym",
        "AveragePool",
        [f(1, 2, 5, 5)],
        attrs={"kernel_shape": [2, 2], "pads": [1, 0, 0, 1]},
    ),
    C(
        "AveragePool-same-lower",
        "AveragePool",
        [f(1, 2, 5, 5)],
        attrs={"kernel_shape": [3, 3], "auto_pad": "SAME_LOWER", "strides": [2, 2]},
    ),
    C(
        "AveragePool-ceil",
        "AveragePool",
        [f(1, 2, 7, 7)],
        attrs={"kernel_shape": [2, 2], "strides": [2, 2], "ceil_mode": 1},
    ),
    C("GlobalAveragePool", "GlobalAveragePool", [IMG]),
    C("GlobalMaxPool", "GlobalMaxPool", [IMG]),
    C("BatchNormalization", "BatchNormalization", [IMG, f(3), f(3), f(3), pos(3)], attrs={"epsilon": 1e-3}),
    C("BatchNormalization-opset7", "BatchNormalization", [f(2, 3), f(3), f(3), f(3), pos(3)], opset=7),
    C("InstanceNormalization", "InstanceNormalization", [IMG, f(3), f(3)], rtol=1e-3, atol=1e-4),
    C("LayerNormalization", "LayerNormalization", [f(2, 3, 8), f(8), f(8)], rtol=1e-3, atol=1e-4),
    C(
        "LayerNormalization-axis",
        "LayerNormalization",
        [f(2, 3, 4), f(3, 4), f(3, 4)],
        attrs={"axis": 1},
        rtol=1e-3,
        atol=1e-4,
    ),
    C(
        "LayerNormalization-nobias-stats",
        "LayerNormalization",
        [f(2, 6), f(6)],
        outputs=3,
        rtol=1e-3,
        atol=1e-4,
    ),
    C(
        "GroupNormalization",
        "GroupNormalization",
        [f(2, 4, 3, 3), f(4), f(4)],
        attrs={"num_groups": 2},
        opset=21,
        rtol=1e-3,
        atol=1e-4,
    ),
    C("LRN", "LRN", [IMG], attrs={"size": 3, "alpha": 1e-3, "beta": 0.75, "bias": 2.0}),
    C("MeanVarianceNormalization", "MeanVarianceNormalization", [IMG], rtol=1e-3, atol=1e-4),
    C("MatMul", "MatMul", [f(2, 3, 4), f(4, 5)]),
    C("MatMul-batch-broadcast", "MatMul", [f(2, 1, 3, 4), f(3, 4, 2)]),
    C("MatMul-vector", "MatMul", [f(4), f(2, 4, 3)]),
    C("Gemm", "Gemm", [f(3, 4), f(4, 5), f(5)]),
    C(
        "Gemm-trans-alpha-beta",
        "Gemm",
        [f(4, 3), f(5, 4), f(1, 5)],
        attrs={"transA": 1, "transB": 1, "alpha": 0.5, "beta": 2.0},
    ),
    C("Gemm-no-c", "Gemm", [f(3, 4), f(4, 5)], opset=11),
    C("Einsum-matmul", "Einsum", [f(2, 3), f(3, 4)], attrs={"equation": "ij,jk->ik"}),
    C("Einsum-attention", "Einsum", [f(2, 2, 3, 4), f(2, 2, 5, 4)], attrs={"equation": "bhqd,bhkd->bhqk"}),
    C("Einsum-trace-implicit", "Einsum", [f(3, 3)], attrs={"equation": "ii"}),
    C("Einsum-ellipsis", "Einsum", [f(2, 3, 4), f(2, 4)], attrs={"equation": "...ij,...j->...i"}),
    # ---------------------------------------------------------------- resize
    C(
        "Resize-nearest-scales",
        "Resize",
        [f(1, 2, 3, 4), None, np.array([1, 1, 2, 2], np.float32)],
        consts=(2,),
    ),
    C(
        "Resize-nearest-sizes-asym-floor",
        "Resize",
        [f(1, 2, 3, 4), None, None, i64(1, 2, 7, 5)],
        attrs={"coordinate_transformation_mode": "asymmetric", "nearest_mode": "floor"},
        consts=(3,),
    ),
    C(
        "Resize-nearest-ceil-half",
        "Resize",
        [f(1, 1, 5, 5), None, None, i64(1, 1, 3, 8)],
        attrs={"nearest_mode": "ceil", "coordinate_transformation_mode": "tf_half_pixel_for_nn"},
        consts=(3,),
    ),
    C(
        "Resize-linear",
        "Resize",
        [f(1, 2, 3, 4), None, np.array([1, 1, 2, 1.5], np.float32)],
        attrs={"mode": "linear"},
        consts=(2,),
    ),
    C(
        "Resize-linear-align",
        "Resize",
        [f(1, 2, 3, 4), None, None, i64(1, 2, 5, 7)],
        attrs={"mode": "linear", "coordinate_transformation_mode": "align_corners"},
        consts=(3,),
    ),
    C(
        "Resize-linear-pytorch-down",
        "Resize",
        [f(1, 2, 8, 8), None, None, i64(1, 2, 3, 1)],
        attrs={"mode": "linear", "coordinate_transformation_mode": "pytorch_half_pixel"},
        consts=(3,),
    ),
    C(
        "Resize-cubic",
        "Resize",
        [f(1, 1, 4, 4), None, np.array([1, 1, 2, 2], np.float32)],
        attrs={"mode": "cubic"},
        consts=(2,),
        rtol=1e-3,
        atol=1e-4,
    ),
    C(
        "Resize-cubic-exclude",
        "Resize",
        [f(1, 1, 4, 4), None, np.array([1, 1, 1.5, 0.75], np.float32)],
        attrs={"mode": "cubic", "exclude_outside": 1, "cubic_coeff_a": -0.5},
        consts=(2,),
        rtol=1e-3,
        atol=1e-4,
    ),
    C(
        "Resize-crop",
        "Resize",
        [f(1, 1, 4, 4), np.array([0, 0, 0.2, 0.1, 1, 1, 0.9, 1.2], np.float32), None, i64(1, 1, 3, 5)],
        attrs={
            "mode": "linear",
            "coordinate_transformation_mode": "tf_crop_and_resize",
            "extrapolation_value": 9.0,
        },
        consts=(1, 3),
    ),
    C(
        "Resize-axes-not-larger",
        "Resize",
        [f(1, 2, 4, 6), None, None, i64(6, 6)],
        attrs={"axes": [2, 3], "keep_aspect_ratio_policy": "not_larger"},
        consts=(3,),
        opset=18,
    ),
    C("Resize-opset10", "Resize", [f(1, 2, 3, 3), np.array([1, 1, 2, 2], np.float32)], consts=(1,), opset=10),
    C(
        "Resize-opset11-roi",
        "Resize",
        [f(1, 2, 3, 3), np.array([], np.float32), np.array([1, 1, 2, 2], np.float32)],
        attrs={"mode": "linear"},
        consts=(1, 2),
        opset=11,
    ),
    C(
        "Upsample-opset9",
        "Upsample",
        [f(1, 2, 3, 3), np.array([1, 1, 2, 3], np.float32)],
        consts=(1,),
        opset=9,
    ),
    C(
        "Upsample-opset7-linear",
        "Upsample",
        [f(1, 2, 3, 3)],
        attrs={"scales": [1.0, 1.0, 2.0, 2.0], "mode": "linear"},
        opset=7,
    ),
    C("GridSample", "GridSample", [f(1, 2, 4, 5), unit(1, 3, 2, 2)], opset=16),
    C(
        "GridSample-nearest-border-align",
        "GridSample",
        [f(1, 2, 4, 5), f(1, 3, 2, 2)],
        attrs={"mode": "nearest", "padding_mode": "border", "align_corners": 1},
        opset=16,
    ),
    C(
        "GridSample-reflection",
        "GridSample",
        [f(1, 1, 4, 5), f(1, 3, 2, 2) * 1.5],
        attrs={"padding_mode": "reflection"},
        opset=16,
    ),
    # ---------------------------------------------------------------- quantize
    C("QuantizeLinear", "QuantizeLinear", [f(3, 4) * 5, np.array(0.1, np.float32), np.array(128, np.uint8)]),
    C(
        "QuantizeLinear-int8-axis",
        "QuantizeLinear",
        [f(2, 3) * 5, np.array([0.1, 0.2, 0.05], np.float32), np.array([0, 1, -2], np.int8)],
        attrs={"axis": 1},
    ),
    C(
        "DequantizeLinear",
        "DequantizeLinear",
        [np.array([[0, 128, 255]], np.uint8), np.array(0.5, np.float32), np.array(128, np.uint8)],
    ),
    C(
        "DequantizeLinear-axis",
        "DequantizeLinear",
        [np.array([[1, -2], [3, 4]], np.int8), np.array([0.5, 2.0], np.float32)],
        attrs={"axis": 0},
    ),
    C(
        # exact ties of x / 0.02: ONNX rounds x / scale half to even (x * (1 / scale) lands elsewhere)
        "QuantizeLinear-int8-ties",
        "QuantizeLinear",
        [
            ((np.arange(-120, 120, dtype=np.float32) + 0.5) * np.float32(0.02)).astype(np.float32),
            np.array(0.02, np.float32),
            np.array(3, np.int8),
        ],
    ),
    C(
        "DequantizeLinear-uint8-axis",
        "DequantizeLinear",
        [
            np.array([[0, 7, 255], [128, 3, 9]], np.uint8),
            np.array([0.5, 0.02, 3.0], np.float32),
            np.array([128, 0, 9], np.uint8),
        ],
        attrs={"axis": 1},
    ),
    C(
        "DequantizeLinear-int32",
        "DequantizeLinear",
        [np.array([[-70000, 3], [1, 123456]], np.int32), np.array(0.25, np.float32)],
    ),
    C(
        "DequantizeLinear-f16-scale",
        "DequantizeLinear",
        [np.array([[1, -2], [3, 127]], np.int8), np.array(0.1, np.float16), np.array(-1, np.int8)],
        opset=19,
        rtol=1e-3,
        atol=1e-3,
    ),
    C(
        "DequantizeLinear-block",
        "DequantizeLinear",
        [np.array([[1, -2, 3, 4], [5, 6, -7, 8]], np.int8), np.array([[0.5, 2.0], [1.5, 0.25]], np.float32)],
        attrs={"axis": 1, "block_size": 2},
        opset=21,
    ),
    C("DynamicQuantizeLinear", "DynamicQuantizeLinear", [f(3, 4)], outputs=3, rtol=1e-3, atol=1e-3),
    # 3-d pools (kept last: a row inserted earlier would shift every later row's random inputs)
    C("MaxPool-3d", "MaxPool", [f(1, 2, 5, 6, 7)], attrs={"kernel_shape": [2, 3, 2], "strides": [2, 1, 2]}),
    C(
        "MaxPool-3d-pads-dilation-ceil",
        "MaxPool",
        [f(2, 2, 6, 5, 7)],
        attrs={"kernel_shape": [3, 2, 2], "pads": [1, 0, 1, 1, 1, 0], "dilations": [1, 2, 1], "ceil_mode": 1},
    ),
    C(
        "MaxPool-3d-indices",
        "MaxPool",
        [f(1, 2, 4, 5, 6)],
        attrs={"kernel_shape": [2, 2, 2], "strides": [2, 2, 2]},
        outputs=2,
    ),
    C(
        "AveragePool-3d",
        "AveragePool",
        [f(1, 3, 5, 6, 7)],
        attrs={"kernel_shape": [2, 2, 3], "strides": [1, 2, 2]},
    ),
    C(
        "AveragePool-3d-pads-exclude",
        "AveragePool",
        [f(2, 2, 5, 5, 6)],
        attrs={"kernel_shape": [3, 3, 3], "pads": [1, 1, 1, 1, 1, 1], "count_include_pad": 0},
    ),
    C(
        "AveragePool-3d-pads-include-ceil",
        "AveragePool",
        [f(1, 2, 6, 5, 7)],
        attrs={
            "kernel_shape": [2, 3, 2],
            "strides": [2, 2, 2],
            "pads": [1, 1, 0, 0, 1, 1],
            "count_include_pad": 1,
            "ceil_mode": 1,
        },
    ),
    # legacy forms (opsets 7-8): per-position batch-norm statistics, column-major max-pool indices
    C(
        "BatchNormalization-opset7-spatial0",
        "BatchNormalization",
        [f(2, 3, 4), pos(3, 4), f(3, 4), f(3, 4), pos(3, 4)],
        attrs={"spatial": 0, "epsilon": 1e-3},
        opset=7,
        consts=(1, 2, 3, 4),
    ),
    C(
        "MaxPool-storage-order-1",
        "MaxPool",
        [f(2, 2, 5, 6)],
        attrs={"kernel_shape": [2, 2], "strides": [2, 2], "storage_order": 1},
        opset=8,
        outputs=2,
    ),
    C(
        "MaxPool-3d-storage-order-1-pads",
        "MaxPool",
        [f(1, 2, 4, 5, 6)],
        attrs={"kernel_shape": [2, 2, 2], "pads": [1, 0, 1, 0, 1, 1], "storage_order": 1},
        opset=12,
        outputs=2,
    ),
]
