"""Control flow, sequences, recurrent options and constants: graphs against onnxruntime."""

from __future__ import annotations

import numpy as np
import pytest
from burn_onnx_tests._util import check
from onnx import TensorProto, helper, numpy_helper

R = np.random.default_rng(11)


def _f(*shape: int) -> np.ndarray:
    return R.standard_normal(shape).astype(np.float32)


def _branch(name: str, op: str, scale: float) -> object:
    c = numpy_helper.from_array(np.array(scale, np.float32), f"{name}_c")
    return helper.make_graph(
        [helper.make_node(op, ["x", f"{name}_c"], [f"{name}_out"])],
        name,
        [],
        [helper.make_empty_tensor_value_info(f"{name}_out")],
        [c],
    )


@pytest.mark.parametrize("positive", [True, False])
def test_if_on_a_host_condition(positive, device):
    x = np.abs(_f(2, 3)) * (1 if positive else -1)
    nodes = [
        helper.make_node("ReduceSum", ["x"], ["total"], keepdims=0),
        helper.make_node("Greater", ["total", "zero"], ["cond"]),
        helper.make_node(
            "If",
            ["cond"],
            ["y"],
            then_branch=_branch("then", "Mul", 2.0),
            else_branch=_branch("else", "Add", 10.0),
        ),
    ]
    check(nodes, {"x": x}, ["y"], device, {"zero": np.array(0.0, np.float32)}, opset=13)


def test_loop_with_carried_state_and_scan_output(device):
    body = helper.make_graph(
        [
            helper.make_node("Identity", ["cond_in"], ["cond_out"]),
            helper.make_node("Add", ["acc_in", "x"], ["acc_out"]),
            helper.make_node("Mul", ["acc_out", "two"], ["scan"]),
        ],
        "body",
        [
            helper.make_tensor_value_info("i", TensorProto.INT64, []),
            helper.make_tensor_value_info("cond_in", TensorProto.BOOL, []),
            helper.make_tensor_value_info("acc_in", TensorProto.FLOAT, [2]),
        ],
        [
            helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []),
            helper.make_tensor_value_info("acc_out", TensorProto.FLOAT, [2]),
            helper.make_tensor_value_info("scan", TensorProto.FLOAT, [2]),
        ],
    )
    nodes = [helper.make_node("Loop", ["trips", "cond", "acc0"], ["acc", "scans"], body=body)]
    consts = {"trips": np.array(4, np.int64), "cond": np.array(True), "two": np.array(2.0, np.float32)}
    check(nodes, {"x": _f(2), "acc0": _f(2)}, ["acc", "scans"], device, consts, opset=13)


def test_sequence_ops(device):
    nodes = [
        helper.make_node("SequenceConstruct", ["a", "b"], ["s1"]),
        helper.make_node("SequenceInsert", ["s1", "c"], ["s2"]),
        helper.make_node("SequenceInsert", ["s2", "a", "zero"], ["s3"]),
        helper.make_node("SequenceErase", ["s3", "one"], ["s4"]),
        helper.make_node("SequenceLength", ["s4"], ["n"]),
        helper.make_node("SequenceAt", ["s4", "minus1"], ["last"]),
        helper.make_node("ConcatFromSequence", ["s4"], ["cat"], axis=0),
        helper.make_node("ConcatFromSequence", ["s4"], ["stacked"], axis=1, new_axis=1),
        helper.make_node("SplitToSequence", ["cat"], ["parts"], axis=0, split=None),
        helper.make_node("ConcatFromSequence", ["parts"], ["again"], axis=1),
        helper.make_node("SplitToSequence", ["cat"], ["chunks"], axis=0),
        helper.make_node("SequenceLength", ["chunks"], ["n_chunks"]),
        helper.make_node("SequenceEmpty", [], ["empty"], dtype=TensorProto.FLOAT),
        helper.make_node("SequenceLength", ["empty"], ["n_empty"]),
    ]
    consts = {"zero": np.array(0, np.int64), "one": np.array(1, np.int64), "minus1": np.array(-1, np.int64)}
    feeds = {"a": _f(2, 3), "b": _f(2, 3), "c": _f(2, 3)}
    check(
        nodes,
        feeds,
        ["n", "last", "cat", "stacked", "again", "n_chunks", "n_empty"],
        device,
        consts,
        opset=13,
    )


def test_split_to_sequence_sizes(device):
    nodes = [
        helper.make_node("SplitToSequence", ["x", "sizes"], ["s"], axis=1),
        helper.make_node("SequenceAt", ["s", "one"], ["second"]),
    ]
    check(
        nodes,
        {"x": _f(2, 5)},
        ["second"],
        device,
        {"sizes": np.array([2, 3], np.int64), "one": np.array(1, np.int64)},
        opset=13,
    )


def test_constant_forms(device):
    nodes = [
        helper.make_node("Constant", [], ["t"], value=numpy_helper.from_array(_f(2, 3))),
        helper.make_node("Constant", [], ["fl"], value_float=1.5),
        helper.make_node("Constant", [], ["fls"], value_floats=[1.0, 2.0, 3.0]),
        helper.make_node("Constant", [], ["ii"], value_ints=[3, 2]),
        helper.make_node("Add", ["t", "fl"], ["a"]),
        helper.make_node("Mul", ["a", "fls"], ["m"]),
        helper.make_node("Reshape", ["m", "ii"], ["y"]),
        helper.make_node("Add", ["y", "x"], ["out"]),
    ]
    check(nodes, {"x": _f(3, 2)}, ["out"], device, opset=13)


@pytest.mark.parametrize(
    ("op", "gates", "attrs", "extra"),
    [
        ("LSTM", 4, {"direction": "reverse"}, 3),
        ("LSTM", 4, {"clip": 0.5}, 3),
        (
            "LSTM",
            4,
            {
                "direction": "bidirectional",
                "activations": ["HardSigmoid", "Tanh", "Relu"] * 2,
                "activation_alpha": [0.3, 0.3],
                "activation_beta": [0.4, 0.4],
            },
            3,
        ),
        ("GRU", 3, {"direction": "bidirectional"}, 2),
        ("GRU", 3, {"linear_before_reset": 1, "direction": "reverse"}, 2),
        ("RNN", 1, {"activations": ["Relu"]}, 2),
    ],
    ids=["lstm-reverse", "lstm-clip", "lstm-bidir-activations", "gru-bidir", "gru-lbr-reverse", "rnn-relu"],
)
def test_recurrent_options(op, gates, attrs, extra, device):
    seq, batch, feat, hidden = 4, 3, 5, 2
    dirs = 2 if attrs.get("direction") == "bidirectional" else 1
    x = _f(batch, seq, feat) if attrs.get("layout") else _f(seq, batch, feat)
    consts = {
        "W": _f(dirs, gates * hidden, feat) * 0.5,
        "R": _f(dirs, gates * hidden, hidden) * 0.5,
        "B": _f(dirs, 2 * gates * hidden) * 0.1,
    }
    outs = ["Y", "Y_h", "Y_c"][:extra]
    node = helper.make_node(op, ["X", "W", "R", "B"], outs, hidden_size=hidden, **attrs)
    check([node], {"X": x}, outs, device, consts, opset=14, rtol=1e-3, atol=1e-4)


def test_lstm_sequence_lens_initial_state_and_peepholes(device):
    seq, batch, feat, hidden = 4, 3, 2, 3
    consts = {
        "W": _f(2, 4 * hidden, feat) * 0.5,
        "R": _f(2, 4 * hidden, hidden) * 0.5,
        "B": _f(2, 8 * hidden) * 0.1,
        "lens": np.array([4, 2, 3], np.int32),
        "P": _f(2, 3 * hidden) * 0.3,
    }
    feeds = {"X": _f(seq, batch, feat), "h0": _f(2, batch, hidden), "c0": _f(2, batch, hidden)}
    node = helper.make_node(
        "LSTM",
        ["X", "W", "R", "B", "lens", "h0", "c0", "P"],
        ["Y", "Y_h", "Y_c"],
        hidden_size=hidden,
        direction="bidirectional",
    )
    check([node], feeds, ["Y", "Y_h", "Y_c"], device, consts, opset=14, rtol=1e-3, atol=1e-4)


def test_lstm_batch_first_layout(device):
    """onnxruntime has no layout=1; its layout=0 run on the transposed input is the reference."""
    from burn_onnx_tests._util import assert_close, make_model, reference, run_burn

    seq, batch, feat, hidden = 4, 3, 5, 2
    consts = {"W": _f(1, 4 * hidden, feat) * 0.5, "R": _f(1, 4 * hidden, hidden) * 0.5}
    x = _f(batch, seq, feat)
    outs = ["Y", "Y_h", "Y_c"]
    ref_model = make_model(
        [helper.make_node("LSTM", ["X", "W", "R"], outs, hidden_size=hidden)],
        {"X": x.transpose(1, 0, 2)},
        outs,
        consts,
        14,
    )
    want = reference(ref_model, {"X": x.transpose(1, 0, 2)})
    model = make_model(
        [helper.make_node("LSTM", ["X", "W", "R"], outs, hidden_size=hidden, layout=1)],
        {"X": x},
        outs,
        consts,
        14,
    )
    got = run_burn(model, {"X": x}, device)
    assert_close(got[0], want[0].transpose(2, 0, 1, 3), 1e-3, 1e-4)
    assert_close(got[1], want[1].transpose(1, 0, 2), 1e-3, 1e-4)
    assert_close(got[2], want[2].transpose(1, 0, 2), 1e-3, 1e-4)
