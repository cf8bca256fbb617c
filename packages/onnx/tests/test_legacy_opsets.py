"""Legacy opset forms, one row each: the model is built with onnx.helper at the old opset and burn-onnx
(cpu) is compared with onnxruntime, or, where onnxruntime has no kernel for that version (it starts most
ops at opset 7), with a numpy reference written from the old operator's definition.

Covered: attributes that later became inputs (Reshape/Split/Slice/Pad/Squeeze/Unsqueeze/ReduceX/Clip/TopK/
Upsample/Dropout), opset-6 ``broadcast``/``axis`` on binary ops and Gemm, PRelu's per-channel slope,
BatchNormalization's is_test/spatial, Softmax/LogSoftmax/Hardmax's 2-d coercion before opset 13, Flatten,
MaxPool storage_order, AveragePool count_include_pad, Resize 10/11, recurrent ops at opset 7, and
required attributes that old files may lack (a load-time error naming the node, not a KeyError)."""

from __future__ import annotations

import burn
import burn_onnx
import numpy as np
import pytest
from burn_onnx_tests._cases import Case, f, pos
from burn_onnx_tests._util import check, make_model
from onnx import helper, numpy_helper

R = np.random.default_rng(77)


def L(id: str, op: str, inputs: list, opset: int, **kw) -> Case:
    return Case(id, op, inputs, opset=opset, **kw)


def _avg_exclude_pad(x: np.ndarray, k: tuple[int, int], pads: tuple[int, int, int, int]) -> np.ndarray:
    """AveragePool-1 at stride 1: each window's sum over the count of real (not padding) elements."""
    t, left, bottom, right = pads
    widths = ((0, 0), (0, 0), (t, bottom), (left, right))
    xp, ones = np.pad(x, widths), np.pad(np.ones_like(x), widths)
    oh, ow = xp.shape[2] - k[0] + 1, xp.shape[3] - k[1] + 1
    total, count = np.zeros(x.shape[:2] + (oh, ow)), np.zeros(x.shape[:2] + (oh, ow))
    for i in range(k[0]):
        for j in range(k[1]):
            total += xp[:, :, i : i + oh, j : j + ow]
            count += ones[:, :, i : i + oh, j : j + ow]
    return (total / count).astype(np.float32)


def _bn(x, s, b, m, v, eps=1e-5):
    view = (-1,) + (1,) * (x.ndim - 2) if s.ndim == 1 else s.shape
    s, b, m, v = (p.reshape(view) for p in (s, b, m, v))
    return [(x - m) / np.sqrt(v + eps) * s + b]


def _prelu(per_channel: bool):
    def ref(x, s):
        if per_channel:
            s = s.reshape((-1,) + (1,) * (x.ndim - 2))
        return [np.where(x < 0, x * s, x)]

    return ref


ORT_GAP = [  # opset 6 forms onnxruntime has no kernel for: numpy references from the old definitions
    L(
        "Dropout-6-is_test",
        "Dropout",
        [f(2, 3, 4)],
        6,
        attrs={"is_test": 1, "ratio": 0.3},
        expect=lambda x: [x],
    ),
    L(
        "BatchNormalization-6-is_test",
        "BatchNormalization",
        [f(2, 3, 4, 4), pos(3), f(3), f(3), pos(3)],
        6,
        attrs={"is_test": 1, "epsilon": 1e-3},
        expect=lambda *a: _bn(*a, eps=1e-3),
    ),
    L(
        "BatchNormalization-6-spatial0",
        "BatchNormalization",
        [f(2, 3, 4), pos(3, 4), f(3, 4), f(3, 4), pos(3, 4)],
        6,
        attrs={"is_test": 1, "spatial": 0},
        expect=_bn,
    ),
    L(
        "Gemm-6-broadcast-row",
        "Gemm",
        [f(3, 4), f(4, 5), f(5)],
        6,
        attrs={"broadcast": 1},
        expect=lambda a, b, c: [a @ b + c],
    ),
    L(
        "Gemm-6-broadcast-scalar",
        "Gemm",
        [f(3, 4), f(4, 5), f(1)],
        6,
        attrs={"broadcast": 1, "alpha": 0.5, "beta": 2.0},
        expect=lambda a, b, c: [0.5 * (a @ b) + 2 * c],
    ),
    L(
        "Gemm-6-broadcast-column",
        "Gemm",
        [f(3, 4), f(4, 5), f(3, 1)],
        6,
        attrs={"broadcast": 1},
        expect=lambda a, b, c: [a @ b + c],
    ),
    L(
        "Gemm-6-full-c-transB",
        "Gemm",
        [f(3, 4), f(5, 4), f(3, 5)],
        6,
        attrs={"transB": 1},
        expect=lambda a, b, c: [a @ b.T + c],
    ),
    L(
        "Gemm-6-transA",
        "Gemm",
        [f(4, 3), f(4, 5), f(5)],
        6,
        attrs={"broadcast": 1, "transA": 1},
        expect=lambda a, b, c: [a.T @ b + c],
    ),
    L(
        "Add-6-axis1",
        "Add",
        [f(2, 3, 4, 5), f(3)],
        6,
        attrs={"broadcast": 1, "axis": 1},
        expect=lambda a, b: [a + b[:, None, None]],
    ),
    L(
        "Add-6-axis1-2d",
        "Add",
        [f(2, 3, 4, 5), f(3, 4)],
        6,
        attrs={"broadcast": 1, "axis": 1},
        expect=lambda a, b: [a + b[:, :, None]],
    ),
    L(
        "Add-6-suffix",
        "Add",
        [f(2, 3, 4, 5), f(4, 5)],
        6,
        attrs={"broadcast": 1},
        expect=lambda a, b: [a + b],
    ),
    L(
        "Add-6-scalar-axis",
        "Add",
        [f(2, 3, 4), f(1)],
        6,
        attrs={"broadcast": 1, "axis": 1},
        expect=lambda a, b: [a + b],
    ),
    L("Add-6-same-shape", "Add", [f(2, 3), f(2, 3)], 6, expect=lambda a, b: [a + b]),
    L(
        "Sub-6-axis0",
        "Sub",
        [f(2, 3, 4), f(2)],
        6,
        attrs={"broadcast": 1, "axis": 0},
        expect=lambda a, b: [a - b[:, None, None]],
    ),
    L(
        "Mul-6-negative-axis",
        "Mul",
        [f(2, 3, 4), f(3)],
        6,
        attrs={"broadcast": 1, "axis": -2},
        expect=lambda a, b: [a * b[:, None]],
    ),
    L(
        "Div-6-axis1",
        "Div",
        [f(2, 3, 4), pos(3, 4)],
        6,
        attrs={"broadcast": 1, "axis": 1},
        expect=lambda a, b: [a / b],
    ),
    L(
        "Pow-6-axis1",
        "Pow",
        [pos(2, 3, 4), f(3)],
        6,
        attrs={"broadcast": 1, "axis": 1},
        expect=lambda a, b: [a ** b[:, None]],
        rtol=1e-4,
    ),
    L(
        "And-6-axis1",
        "And",
        [R.random((2, 3, 4)) > 0.5, R.random(3) > 0.5],
        6,
        attrs={"broadcast": 1, "axis": 1},
        expect=lambda a, b: [a & b[:, None]],
    ),
    L(
        "Xor-6-axis0",
        "Xor",
        [R.random((2, 3, 4)) > 0.5, R.random(2) > 0.5],
        6,
        attrs={"broadcast": 1, "axis": 0},
        expect=lambda a, b: [a ^ b[:, None, None]],
    ),
    L(
        "Greater-6-axis1",
        "Greater",
        [f(2, 3, 4), f(3)],
        6,
        attrs={"broadcast": 1, "axis": 1},
        expect=lambda a, b: [a > b[:, None]],
    ),
    L(
        "Equal-6-axis1-int",
        "Equal",
        [np.arange(24, dtype=np.int32).reshape(2, 3, 4) % 3, np.arange(3, dtype=np.int32)],
        6,
        attrs={"broadcast": 1, "axis": 1},
        expect=lambda a, b: [a == b[:, None]],
    ),
    L("PRelu-6-per-channel-3d", "PRelu", [f(2, 3, 4), f(3)], 6, expect=_prelu(True)),
    L("PRelu-6-per-channel-4d", "PRelu", [f(2, 3, 4, 5), f(3)], 6, expect=_prelu(True)),
    L("PRelu-6-per-channel-initializer", "PRelu", [f(2, 3, 4, 5), f(3)], 6, consts=(1,), expect=_prelu(True)),
    L("PRelu-6-per-channel-2d", "PRelu", [f(2, 3), f(3)], 6, expect=_prelu(False)),
    L("PRelu-6-full-shape", "PRelu", [f(2, 3, 4), f(2, 3, 4)], 6, expect=_prelu(False)),
    L("PRelu-6-one-slope", "PRelu", [f(2, 3, 4), f(1)], 6, expect=_prelu(False)),
    L("PRelu-6-c11", "PRelu", [f(2, 3, 4, 5), f(3, 1, 1)], 6, expect=_prelu(False)),
    L(
        "AveragePool-1-pads-exclude",
        "AveragePool",
        [f(1, 2, 5, 5)],
        6,
        attrs={"kernel_shape": [3, 3], "pads": [1, 1, 1, 1]},
        expect=lambda x: [_avg_exclude_pad(x, (3, 3), (1, 1, 1, 1))],
    ),
    L(
        "AveragePool-1-same-lower",
        "AveragePool",
        [f(1, 2, 5, 5)],
        6,
        attrs={"kernel_shape": [2, 2], "auto_pad": "SAME_LOWER"},
        expect=lambda x: [_avg_exclude_pad(x, (2, 2), (1, 1, 0, 0))],
    ),
    L(
        "Upsample-9-int64-nearest",
        "Upsample",
        [np.arange(6, dtype=np.int64).reshape(1, 1, 2, 3), np.array([1, 1, 2, 2], np.float32)],
        9,
        consts=(1,),
        expect=lambda x, s: [x.repeat(2, 2).repeat(2, 3)],
    ),
    # The mask of Dropout-7/10 in inference is all "kept" (the ONNX definition and its reference
    # evaluator); onnxruntime's identity kernel for those versions writes zeros instead.
    L(
        "Dropout-7-mask",
        "Dropout",
        [f(2, 3, 4)],
        7,
        attrs={"ratio": 0.3},
        outputs=2,
        expect=lambda x: [x, np.ones_like(x)],
    ),
    L(
        "Dropout-10-mask",
        "Dropout",
        [f(2, 3, 4)],
        10,
        attrs={"ratio": 0.3},
        outputs=2,
        expect=lambda x: [x, np.ones(x.shape, bool)],
    ),
]

i64 = lambda *v: np.array(v, np.int64)  # noqa: E731
f32 = lambda *v: np.array(v, np.float32)  # noqa: E731

ORT = [  # onnxruntime runs these versions
    L("Dropout-7", "Dropout", [f(2, 3, 4)], 7, attrs={"ratio": 0.3}),
    L("Dropout-12-ratio-input", "Dropout", [f(2, 3), np.array(0.4, np.float32)], 12, consts=(1,)),
    L(
        "BatchNormalization-7-spatial0-4d",
        "BatchNormalization",
        [f(2, 3, 2, 2), pos(3, 2, 2), f(3, 2, 2), f(3, 2, 2), pos(3, 2, 2)],
        7,
        attrs={"spatial": 0},
    ),
    L(
        "BatchNormalization-7-momentum",
        "BatchNormalization",
        [f(2, 3, 4, 4), pos(3), f(3), f(3), pos(3)],
        7,
        attrs={"momentum": 0.8},
    ),
    L("BatchNormalization-9", "BatchNormalization", [f(2, 3, 4, 4), pos(3), f(3), f(3), pos(3)], 9),
    L("Upsample-7-nearest", "Upsample", [f(1, 2, 3, 4)], 7, attrs={"scales": [1.0, 1.0, 2.0, 3.0]}),
    L(
        "Upsample-7-nearest-fractional",
        "Upsample",
        [f(1, 2, 3, 4)],
        7,
        attrs={"scales": [1.0, 1.0, 1.5, 2.5]},
    ),
    L(
        "Upsample-7-linear",
        "Upsample",
        [f(1, 2, 3, 4)],
        7,
        attrs={"scales": [1.0, 1.0, 2.0, 2.0], "mode": "linear"},
    ),
    L("Upsample-9-nearest", "Upsample", [f(1, 2, 3, 4), f32(1, 1, 2, 2)], 9, consts=(1,)),
    L(
        "Upsample-9-linear-fractional",
        "Upsample",
        [f(1, 2, 3, 4), f32(1, 1, 1.5, 2.5)],
        9,
        consts=(1,),
        attrs={"mode": "linear"},
    ),
    L(
        "Upsample-9-linear-3d",
        "Upsample",
        [f(2, 3, 4), f32(1, 2, 2)],
        9,
        consts=(1,),
        attrs={"mode": "linear"},
    ),
    L("Upsample-9-nearest-5d", "Upsample", [f(1, 1, 2, 2, 2), f32(1, 1, 2, 2, 2)], 9, consts=(1,)),
    L("Softmax-6-default-axis-4d", "Softmax", [f(2, 3, 4, 5)], 6),
    L("Softmax-6-axis0", "Softmax", [f(3, 4)], 6, attrs={"axis": 0}),
    L("Softmax-11-axis2-4d", "Softmax", [f(2, 3, 4, 5)], 11, attrs={"axis": 2}),
    L("Softmax-11-axis-neg", "Softmax", [f(2, 3, 4)], 11, attrs={"axis": -1}),
    L("LogSoftmax-6-default", "LogSoftmax", [f(2, 3, 4)], 6),
    L("LogSoftmax-11-axis2-4d", "LogSoftmax", [f(2, 3, 4, 5)], 11, attrs={"axis": 2}),
    L("Hardmax-6-default", "Hardmax", [f(2, 3, 4)], 6),
    L("Hardmax-11-axis0", "Hardmax", [f(2, 3, 4)], 11, attrs={"axis": 0}),
    L("Reshape-6-zero-and-minus-one", "Reshape", [f(2, 3, 4), i64(0, -1)], 6, consts=(1,)),
    L("Split-6-attr", "Split", [f(2, 6)], 6, attrs={"axis": 1, "split": [2, 4]}, outputs=2),
    L("Split-6-equal", "Split", [f(2, 6)], 6, attrs={"axis": 1}, outputs=3),
    L("Split-11-negative-axis", "Split", [f(2, 6)], 11, attrs={"axis": -1, "split": [1, 5]}, outputs=2),
    L("Split-13-input", "Split", [f(2, 6), i64(2, 4)], 13, consts=(1,), attrs={"axis": 1}, outputs=2),
    L("Slice-6-attrs", "Slice", [f(4, 5, 6)], 6, attrs={"starts": [1, 0], "ends": [3, 100], "axes": [0, 2]}),
    L("Slice-6-no-axes-negative", "Slice", [f(4, 5)], 6, attrs={"starts": [-3, 1], "ends": [-1, 1000]}),
    L(
        "Slice-10-negative-steps",
        "Slice",
        [f(5, 6), i64(4, -1), i64(0, -100), i64(0, 1), i64(-2, -3)],
        10,
        consts=(1, 2, 3, 4),
    ),
    L("Pad-6-constant-value", "Pad", [f(2, 3)], 6, attrs={"pads": [0, 1, 1, 2], "value": 1.5}),
    L("Pad-6-reflect", "Pad", [f(2, 3, 4)], 6, attrs={"pads": [0, 0, 1, 0, 0, 2], "mode": "reflect"}),
    L("Pad-6-edge", "Pad", [f(2, 3, 4)], 6, attrs={"pads": [0, 1, 1, 0, 1, 2], "mode": "edge"}),
    L("Pad-6-negative", "Pad", [f(3, 5)], 6, attrs={"pads": [0, -1, -1, 1]}),
    L("Pad-11-inputs", "Pad", [f(2, 3), i64(0, 1, 1, 2), np.array(2.0, np.float32)], 11, consts=(1, 2)),
    L("Squeeze-6-attr", "Squeeze", [f(2, 1, 3, 1)], 6, attrs={"axes": [1]}),
    L("Squeeze-6-all", "Squeeze", [f(2, 1, 3, 1)], 6),
    L("Squeeze-11-negative", "Squeeze", [f(2, 1, 3, 1)], 11, attrs={"axes": [-1]}),
    L("Unsqueeze-6-attr", "Unsqueeze", [f(2, 3)], 6, attrs={"axes": [3, 0]}),
    L("Unsqueeze-11-negative", "Unsqueeze", [f(2, 3)], 11, attrs={"axes": [-1]}),
    *[
        L(f"{op}-6-axes-attr", op, [pos(2, 3, 4)], 6, attrs={"axes": [1]})
        for op in (
            "ReduceSum",
            "ReduceMean",
            "ReduceMax",
            "ReduceMin",
            "ReduceProd",
            "ReduceL1",
            "ReduceL2",
            "ReduceLogSum",
            "ReduceLogSumExp",
            "ReduceSumSquare",
        )
    ],
    L("ReduceMean-6-keepdims0", "ReduceMean", [f(2, 3, 4)], 6, attrs={"axes": [0, 2], "keepdims": 0}),
    L("ReduceMax-6-all", "ReduceMax", [f(2, 3, 4)], 6),
    L("ReduceMin-11-negative", "ReduceMin", [f(2, 3, 4)], 11, attrs={"axes": [-1]}),
    L("ReduceSum-12-attr", "ReduceSum", [f(2, 3, 4)], 12, attrs={"axes": [0]}),
    L("ReduceSum-13-input", "ReduceSum", [f(2, 3, 4), i64(1)], 13, consts=(1,)),
    L("ReduceMean-17-attr", "ReduceMean", [f(2, 3, 4)], 17, attrs={"axes": [1]}),
    L("ArgMax-6", "ArgMax", [f(2, 3, 4)], 6, attrs={"axis": 1, "keepdims": 0}),
    L("ArgMin-6", "ArgMin", [f(2, 3, 4)], 6, attrs={"axis": 2}),
    L("Clip-6-attrs", "Clip", [f(2, 3, 4)], 6, attrs={"min": -0.5, "max": 0.5}),
    L("Clip-6-min-only", "Clip", [f(2, 3, 4)], 6, attrs={"min": -0.5}),
    L("Clip-6-no-bounds", "Clip", [f(2, 3, 4)], 6),
    L(
        "Clip-11-inputs",
        "Clip",
        [f(2, 3), np.array(-0.3, np.float32), np.array(0.4, np.float32)],
        11,
        consts=(1, 2),
    ),
    L("Gemm-7-c-row", "Gemm", [f(3, 4), f(4, 5), f(1, 5)], 7),
    L("Gemm-7-c-scalar", "Gemm", [f(3, 4), f(4, 5), np.array(0.5, np.float32)], 7, attrs={"beta": 0.5}),
    L("Gemm-9-transA", "Gemm", [f(4, 3), f(4, 5), f(5)], 9, attrs={"transA": 1}),
    L("Gemm-11-no-c", "Gemm", [f(3, 4), f(4, 5)], 11, attrs={"alpha": 2.0}),
    L("Less-7-broadcast", "Less", [f(2, 3, 4), f(4)], 7),
    L("Pow-7-broadcast", "Pow", [pos(2, 3), f(3)], 7),
    L("PRelu-7-broadcast", "PRelu", [f(2, 3, 4), f(3, 1)], 7),
    L("PRelu-9-last-axis", "PRelu", [f(2, 3, 4), f(4)], 9),
    L("Concat-6", "Concat", [f(2, 3), f(2, 2)], 6, attrs={"axis": 1}),
    L("Flatten-6-default", "Flatten", [f(2, 3, 4, 5)], 6),
    L("Flatten-6-axis0", "Flatten", [f(2, 3, 4)], 6, attrs={"axis": 0}),
    L("Flatten-6-axis3", "Flatten", [f(2, 3, 4, 5)], 6, attrs={"axis": 3}),
    L("Flatten-9-int", "Flatten", [np.arange(24, dtype=np.int32).reshape(2, 3, 4)], 9, attrs={"axis": 2}),
    L("Flatten-11-negative", "Flatten", [f(2, 3, 4, 5)], 11, attrs={"axis": -1}),
    L("MaxPool-8-indices", "MaxPool", [f(1, 2, 4, 5)], 8, attrs={"kernel_shape": [2, 2]}, outputs=2),
    L(
        "MaxPool-8-storage-order1",
        "MaxPool",
        [f(1, 2, 4, 5)],
        8,
        attrs={"kernel_shape": [2, 2], "storage_order": 1},
        outputs=2,
    ),
    L(
        "MaxPool-8-storage-order1-pads",
        "MaxPool",
        [f(2, 2, 4, 5)],
        8,
        attrs={"kernel_shape": [3, 3], "pads": [1, 1, 1, 1], "storage_order": 1},
        outputs=2,
    ),
    L(
        "MaxPool-6-same-upper",
        "MaxPool",
        [f(1, 2, 5, 5)],
        6,
        attrs={"kernel_shape": [2, 2], "strides": [2, 2], "auto_pad": "SAME_UPPER"},
    ),
    L("MaxPool-6-1d", "MaxPool", [f(1, 2, 7)], 6, attrs={"kernel_shape": [3], "strides": [2]}),
    L(
        "MaxPool-10-ceil",
        "MaxPool",
        [f(1, 2, 5, 5)],
        10,
        attrs={"kernel_shape": [2, 2], "strides": [2, 2], "ceil_mode": 1},
    ),
    L(
        "MaxPool-10-dilations",
        "MaxPool",
        [f(1, 2, 6, 6)],
        10,
        attrs={"kernel_shape": [2, 2], "dilations": [2, 2]},
    ),
    L(
        "AveragePool-7-count-include-pad",
        "AveragePool",
        [f(1, 2, 5, 5)],
        7,
        attrs={"kernel_shape": [3, 3], "pads": [1, 1, 1, 1], "count_include_pad": 1},
    ),
    L(
        "AveragePool-7-include-same-upper",
        "AveragePool",
        [f(1, 2, 5, 5)],
        7,
        attrs={"kernel_shape": [2, 2], "strides": [2, 2], "auto_pad": "SAME_UPPER", "count_include_pad": 1},
    ),
    L(
        "AveragePool-7-1d-include",
        "AveragePool",
        [f(1, 2, 7)],
        7,
        attrs={"kernel_shape": [3], "pads": [1, 1], "count_include_pad": 1},
    ),
    L(
        "AveragePool-10-ceil",
        "AveragePool",
        [f(1, 2, 5, 5)],
        10,
        attrs={"kernel_shape": [2, 2], "strides": [2, 2], "ceil_mode": 1},
    ),
    L(
        "AveragePool-10-ceil-include",
        "AveragePool",
        [f(1, 2, 5, 5)],
        10,
        attrs={"kernel_shape": [2, 2], "strides": [2, 2], "ceil_mode": 1, "count_include_pad": 1},
    ),
    L(
        "AveragePool-11-ceil-pads-include",
        "AveragePool",
        [f(1, 2, 6, 6)],
        11,
        attrs={
            "kernel_shape": [3, 3],
            "strides": [2, 2],
            "pads": [1, 1, 1, 1],
            "ceil_mode": 1,
            "count_include_pad": 1,
        },
    ),
    L("Resize-10-nearest", "Resize", [f(1, 2, 3, 4), f32(1, 1, 2, 1.5)], 10, consts=(1,)),
    L(
        "Resize-10-linear",
        "Resize",
        [f(1, 2, 3, 4), f32(1, 1, 2, 1.5)],
        10,
        consts=(1,),
        attrs={"mode": "linear"},
    ),
    L(
        "Resize-10-linear-down",
        "Resize",
        [f(1, 1, 6, 6), f32(1, 1, 0.5, 0.6)],
        10,
        consts=(1,),
        attrs={"mode": "linear"},
    ),
    L(
        "Resize-11-sizes-linear",
        "Resize",
        [f(1, 2, 3, 4), f32(), f32(), i64(1, 2, 5, 7)],
        11,
        consts=(1, 2, 3),
        attrs={"mode": "linear"},
    ),
    L(
        "Resize-11-cubic",
        "Resize",
        [f(1, 2, 3, 4), f32(), f32(1, 1, 2, 2)],
        11,
        consts=(1, 2),
        attrs={"mode": "cubic"},
    ),
    L(
        "Resize-11-align-corners",
        "Resize",
        [f(1, 2, 3, 4), f32(), f32(1, 1, 2, 2)],
        11,
        consts=(1, 2),
        attrs={"mode": "linear", "coordinate_transformation_mode": "align_corners"},
    ),
    L(
        "Resize-11-nearest-floor-asymmetric",
        "Resize",
        [f(1, 2, 3, 4), f32(), f32(1, 1, 1.7, 2.3)],
        11,
        consts=(1, 2),
        attrs={"mode": "nearest", "nearest_mode": "floor", "coordinate_transformation_mode": "asymmetric"},
    ),
    L(
        "Resize-11-tf-crop-and-resize",
        "Resize",
        [f(1, 2, 4, 4), f32(0, 0, 0.1, 0.2, 1, 1, 0.8, 0.9), f32(1, 1, 1.5, 1.5)],
        11,
        consts=(1, 2),
        attrs={"mode": "linear", "coordinate_transformation_mode": "tf_crop_and_resize"},
    ),
    L("TopK-6-k-attr", "TopK", [f(3, 6)], 6, attrs={"k": 2}, outputs=2),
    L("TopK-6-axis0", "TopK", [f(4, 3)], 6, attrs={"k": 3, "axis": 0}, outputs=2),
    L("TopK-10-k-input", "TopK", [f(3, 6), i64(2)], 10, consts=(1,), outputs=2),
    L("Sum-6", "Sum", [f(2, 3), f(2, 3), f(2, 3)], 6),
    L("Sum-8-broadcast", "Sum", [f(2, 3), f(3)], 8),
    L("Mean-8-broadcast", "Mean", [f(2, 3), f(3), f(1, 1)], 8),
    L("Max-6", "Max", [f(2, 3), f(2, 3)], 6),
    L("Min-8-broadcast", "Min", [f(2, 3), f(1, 3)], 8),
    L("Cast-6-to-int32", "Cast", [f32(-1.7, 2.5, 3.5)], 6, attrs={"to": 6}),
    L("Cast-6-to-bool", "Cast", [f32(-1.7, 0.0, 3.5)], 6, attrs={"to": 9}),
    L("Tile-6", "Tile", [f(2, 1, 3), i64(1, 3, 2)], 6, consts=(1,)),
    L("LeakyRelu-6-default", "LeakyRelu", [f(2, 3)], 6),
    L("Elu-6-default", "Elu", [f(2, 3)], 6),
    L("Selu-6-attrs", "Selu", [f(2, 3)], 6, attrs={"alpha": 1.5, "gamma": 0.7}),
    L("HardSigmoid-6-default", "HardSigmoid", [f(2, 3)], 6),
    L("InstanceNormalization-6", "InstanceNormalization", [f(2, 3, 4, 4), pos(3), f(3)], 6),
    L("LRN-6", "LRN", [f(1, 5, 3, 3)], 6, attrs={"size": 3, "alpha": 0.01, "beta": 0.5, "bias": 2.0}),
    L(
        "Conv-6-same-upper-stride2",
        "Conv",
        [f(1, 2, 5, 5), f(3, 2, 2, 2)],
        6,
        attrs={"auto_pad": "SAME_UPPER", "strides": [2, 2]},
    ),
    L("Conv-6-same-lower", "Conv", [f(1, 2, 5, 5), f(3, 2, 2, 2)], 6, attrs={"auto_pad": "SAME_LOWER"}),
    L("Conv-6-valid", "Conv", [f(1, 2, 5, 5), f(3, 2, 2, 2)], 6, attrs={"auto_pad": "VALID"}),
    L(
        "ConvTranspose-6-output-shape",
        "ConvTranspose",
        [f(1, 2, 3, 3), f(2, 3, 3, 3)],
        6,
        attrs={"strides": [2, 2], "output_shape": [7, 8]},
    ),
    L(
        "ConvTranspose-6-output-padding",
        "ConvTranspose",
        [f(1, 2, 3, 3), f(2, 3, 3, 3)],
        6,
        attrs={"strides": [2, 2], "output_padding": [1, 0]},
    ),
    L("DepthToSpace-6", "DepthToSpace", [f(1, 8, 2, 3)], 6, attrs={"blocksize": 2}),
    L("DepthToSpace-11-CRD", "DepthToSpace", [f(1, 8, 2, 3)], 11, attrs={"blocksize": 2, "mode": "CRD"}),
    L("SpaceToDepth-6", "SpaceToDepth", [f(1, 2, 4, 6)], 6, attrs={"blocksize": 2}),
    L("Gather-6", "Gather", [f(4, 3), i64(2, 0)], 6, consts=(1,), attrs={"axis": 1}),
    L("Scatter-9", "Scatter", [f(3, 3), np.array([[1, 0, 2]], np.int64), f(1, 3)], 9, attrs={"axis": 0}),
    L("Upsample-7-integer-scale", "Upsample", [f(1, 1, 2, 2)], 7, attrs={"scales": [1.0, 1.0, 3.0, 1.0]}),
    L(
        "GRU-7",
        "GRU",
        [f(3, 2, 4), f(1, 15, 4), f(1, 15, 5), f(1, 30)],
        7,
        attrs={"hidden_size": 5},
        outputs=2,
    ),
    L(
        "GRU-7-linear-before-reset-bidirectional",
        "GRU",
        [f(3, 2, 4), f(2, 15, 4), f(2, 15, 5), f(2, 30)],
        7,
        attrs={"hidden_size": 5, "linear_before_reset": 1, "direction": "bidirectional"},
        outputs=2,
    ),
    L(
        "LSTM-7",
        "LSTM",
        [f(3, 2, 4), f(1, 20, 4), f(1, 20, 5), f(1, 40)],
        7,
        attrs={"hidden_size": 5},
        outputs=3,
    ),
    L(
        "RNN-7-relu",
        "RNN",
        [f(3, 2, 4), f(1, 5, 4), f(1, 5, 5)],
        7,
        attrs={"hidden_size": 5, "activations": ["Relu"]},
        outputs=2,
    ),
    L(
        "QuantizeLinear-10",
        "QuantizeLinear",
        [f(2, 3) * 50, np.array(0.5, np.float32), np.array(3, np.uint8)],
        10,
        consts=(1, 2),
    ),
    L(
        "DequantizeLinear-10",
        "DequantizeLinear",
        [np.arange(6, dtype=np.uint8).reshape(2, 3), np.array(0.5, np.float32), np.array(2, np.uint8)],
        10,
        consts=(1, 2),
    ),
]

CASES = ORT_GAP + ORT


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_legacy_form(case: Case) -> None:
    names = [f"in{i}" for i in range(len(case.inputs))]
    inputs = {n: v for i, (n, v) in enumerate(zip(names, case.inputs)) if i not in case.consts}
    consts = {n: v for i, (n, v) in enumerate(zip(names, case.inputs)) if i in case.consts}
    outputs = [f"out{i}" for i in range(case.outputs)]
    node = helper.make_node(case.op, names, outputs, **case.attrs)
    expected = None if case.expect is None else case.expect(*case.inputs)
    check([node], inputs, outputs, burn.device("cpu"), consts, case.opset, case.rtol, case.atol, expected)


@pytest.mark.parametrize(
    ("op", "attrs", "opset", "missing"),
    [
        ("Concat", {}, 6, "axis"),  # Concat-1 defaulted to 1; from Concat-4 on the axis is required
        ("TopK", {}, 6, "k"),
        ("Slice", {"ends": [1]}, 6, "starts"),
        ("Pad", {"mode": "constant"}, 6, "pads"),
        ("Upsample", {"mode": "nearest"}, 7, "scales"),
        ("Unsqueeze", {}, 11, "axes"),
        ("DepthToSpace", {}, 11, "blocksize"),
    ],
)
def test_missing_required_attribute_is_a_load_error(op: str, attrs: dict, opset: int, missing: str) -> None:
    x = f(1, 4, 2, 2)
    model = make_model(
        [helper.make_node(op, ["x"], ["y"], name="old", **attrs)], {"x": x}, ["y"], opset=opset
    )
    with pytest.raises(burn_onnx.UnsupportedOnnxError, match=rf"{op}.*'old'.*{missing} missing"):
        burn_onnx.load(model, device="cpu")


def test_initializers_listed_as_graph_inputs_ir3() -> None:
    """IR version 3 files (the opset 6-8 era) list every initializer among the graph inputs as well; only
    the real inputs are the model's inputs, and the initializers' values are used."""
    x, w, b = f(1, 2, 5, 5), f(3, 2, 3, 3), f(3)
    graph = helper.make_graph(
        [helper.make_node("Conv", ["x", "w", "b"], ["y"], pads=[1, 1, 1, 1])],
        "legacy",
        [helper.make_tensor_value_info(n, 1, list(a.shape)) for n, a in (("x", x), ("w", w), ("b", b))],
        [helper.make_empty_tensor_value_info("y")],
        [numpy_helper.from_array(w, "w"), numpy_helper.from_array(b, "b")],
    )
    proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 6)])
    proto.ir_version = 3
    model = burn_onnx.load(proto.SerializeToString(), device="cpu")
    got = model(x).numpy()
    want = np.zeros((1, 3, 5, 5), np.float32)
    padded = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
    for i in range(3):
        for j in range(3):
            want += np.einsum(
                "ochw->ochw", np.einsum("oc,nchw->nohw", w[:, :, i, j], padded[:, :, i : i + 5, j : j + 5])
            )
    want += b[None, :, None, None]
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize(
    ("op", "attrs", "opset", "missing"),
    [("Concat", {}, 6, "axis"), ("Slice", {"ends": [1]}, 6, "starts"), ("Unsqueeze", {}, 11, "axes")],
)
def test_codegen_names_a_missing_required_attribute(
    tmp_path, op: str, attrs: dict, opset: int, missing: str
) -> None:
    x = f(1, 4, 2, 2)
    model = make_model(
        [helper.make_node(op, ["x"], ["y"], name="old", **attrs)], {"x": x}, ["y"], opset=opset
    )
    with pytest.raises(burn_onnx.UnsupportedOnnxError, match=rf"{op}.*'old'.*{missing} missing"):
        burn_onnx.codegen(model, tmp_path)
    assert not any(tmp_path.iterdir())
