"""Loading: errors listed at load time, malformed files, external data, IR v3 weights as inputs, dtypes,
zero-size and rank-0 tensors, input checks, params/records/fine-tuning, host-resolved shape arithmetic."""

from __future__ import annotations

import warnings

import burn
import burn_onnx
import numpy as np
import onnx
import pytest
from burn_onnx_tests import _builders as B
from burn_onnx_tests._util import assert_close, make_model, reference
from onnx import TensorProto, helper, numpy_helper

R = np.random.default_rng(5)


def _f(*shape: int) -> np.ndarray:
    return R.standard_normal(shape).astype(np.float32)


def _linear_model(dtype: type = np.float32, opset: int = 13) -> tuple[bytes, dict]:
    w = R.standard_normal((4, 3)).astype(dtype)
    elem = helper.np_dtype_to_tensor_dtype(np.dtype(dtype))
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["h"]), helper.make_node("Relu", ["h"], ["y"])],
        "lin",
        [helper.make_tensor_value_info("x", elem, ["batch", 4])],
        [helper.make_tensor_value_info("y", elem, ["batch", 3])],
        [numpy_helper.from_array(w, "w")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    return model.SerializeToString(), {"w": w}


# ------------------------------------------------------------------ errors


def test_every_unsupported_node_is_listed_at_load_time():
    nodes = [
        helper.make_node("Relu", ["x"], ["a"], name="fine"),
        helper.make_node("FooBar", ["a"], ["b"], name="unknown_op"),
        helper.make_node("FusedMatMul", ["b", "b"], ["c"], name="foreign", domain="com.microsoft"),
        helper.make_node("Resize", ["c", "", "scales"], ["d"], name="lanczos", mode="lanczos"),
        helper.make_node("Pad", ["d", "pads"], ["e"], name="bad_mode", mode="mirror"),
    ]
    graph = helper.make_graph(
        nodes,
        "bad",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, 2, 2])],
        [helper.make_empty_tensor_value_info("e")],
        [
            numpy_helper.from_array(np.ones(4, np.float32), "scales"),
            numpy_helper.from_array(np.zeros(8, np.int64), "pads"),
        ],
    )
    model = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", 18), helper.make_opsetid("com.microsoft", 1)]
    )
    with pytest.raises(burn_onnx.UnsupportedOnnxError) as info:
        burn_onnx.load(model.SerializeToString(), device="cpu")
    err = info.value
    assert [n.name for n in err.nodes] == ["unknown_op", "foreign", "lanczos", "bad_mode"]
    assert [(n.op_type, n.domain, n.opset) for n in err.nodes][:2] == [
        ("FooBar", "", 18),
        ("FusedMatMul", "com.microsoft", 1),
    ]
    text = str(err)
    assert "4 unsupported node(s)" in text and "mode='lanczos'" in text and "mode='mirror'" in text
    assert "no converter" in text and "domain 'com.microsoft'" in text


def test_opset_outside_the_supported_range():
    model, _ = _linear_model(opset=5)
    with pytest.raises(burn_onnx.UnsupportedOnnxError, match="older than 6"):
        burn_onnx.load(model)
    too_new = onnx.defs.onnx_opset_version() + 1
    graph = onnx.load_from_string(_linear_model()[0])
    graph.opset_import[0].version = too_new
    with pytest.raises(burn_onnx.UnsupportedOnnxError, match="newer than"):
        burn_onnx.load(graph.SerializeToString())


def test_op_newer_than_the_model_opset():
    model = make_model([helper.make_node("Gelu", ["x"], ["y"])], {"x": _f(2)}, ["y"], opset=17)
    with pytest.raises(burn_onnx.UnsupportedOnnxError, match="supported from opset 20"):
        burn_onnx.load(model)


@pytest.mark.parametrize("cut", [0.5, 0.9, 0.1])
def test_truncated_file_is_a_clear_error(tmp_path, cut):
    data = B.resnet(13)
    path = tmp_path / "cut.onnx"
    path.write_bytes(data[: int(len(data) * cut)])
    with pytest.raises(burn_onnx.OnnxLoadError, match="cut.onnx"):
        burn_onnx.load(path)


def test_truncation_anywhere_never_crashes():
    data = B.transformer(17)
    for end in range(1, len(data), max(1, len(data) // 60)):
        try:
            burn_onnx.load(data[:end], device="cpu")
        except (burn_onnx.OnnxLoadError, burn_onnx.UnsupportedOnnxError):
            pass


def test_garbage_empty_and_missing_files(tmp_path):
    (tmp_path / "junk.onnx").write_bytes(b"\x00\xff not onnx at all \xff" * 10)
    (tmp_path / "empty.onnx").write_bytes(b"")
    with pytest.raises(burn_onnx.OnnxLoadError, match="not a valid ONNX model"):
        burn_onnx.load(tmp_path / "junk.onnx")
    with pytest.raises(burn_onnx.OnnxLoadError, match="empty"):
        burn_onnx.load(tmp_path / "empty.onnx")
    with pytest.raises(burn_onnx.OnnxLoadError, match="cannot read"):
        burn_onnx.load(tmp_path / "missing.onnx")
    with pytest.raises(TypeError, match="expected a path, bytes"):
        burn_onnx.load(42)


def test_undefined_value_is_reported():
    model = make_model([helper.make_node("Add", ["x", "nowhere"], ["y"])], {"x": _f(2)}, ["y"])
    with pytest.raises(burn_onnx.OnnxLoadError, match="undefined value.*'nowhere'"):
        burn_onnx.load(model)


# ------------------------------------------------------------------ file forms


def test_external_data(tmp_path):
    data, inits = _linear_model()
    model = onnx.load_from_string(data)
    onnx.save_model(
        model, tmp_path / "m.onnx", save_as_external_data=True, location="weights.bin", size_threshold=0
    )
    assert (tmp_path / "weights.bin").exists()
    x = _f(2, 4)
    want = reference(data, {"x": x})[0]
    np.testing.assert_allclose(burn_onnx.load(tmp_path / "m.onnx", device="cpu")(x).numpy(), want, rtol=1e-5)
    raw = (tmp_path / "m.onnx").read_bytes()
    with pytest.raises(burn_onnx.OnnxLoadError, match="base_dir"):
        burn_onnx.load(raw)
    np.testing.assert_allclose(burn_onnx.load(raw, base_dir=tmp_path)(x).numpy(), want, rtol=1e-5)
    (tmp_path / "weights.bin").unlink()
    with pytest.raises(burn_onnx.OnnxLoadError, match="external data"):
        burn_onnx.load(tmp_path / "m.onnx")


def test_ir3_weights_listed_as_graph_inputs():
    data = B.old_cnn(8)  # IR v3: every initializer is also a graph input
    model = onnx.load_from_string(data)
    assert len(model.graph.input) > 1
    m = burn_onnx.load(data, device="cpu")
    assert [i.name for i in m.inputs] == ["x"]
    x = _f(2, 3, 8, 8)
    assert_close(m(x).numpy(), reference(data, {"x": x})[0], 1e-4, 1e-5)


def test_model_proto_and_path_load(tmp_path):
    data, _ = _linear_model()
    (tmp_path / "m.onnx").write_bytes(data)
    x = _f(1, 4)
    a = burn_onnx.load(onnx.load_from_string(data), device="cpu")(x).numpy()
    b = burn_onnx.load(str(tmp_path / "m.onnx"), device="cpu")(x).numpy()
    np.testing.assert_array_equal(a, b)


# ------------------------------------------------------------------ dtypes and shapes


def test_float64_model_runs_as_float32_with_one_warning(device):
    data, _ = _linear_model(np.float64)
    x = R.standard_normal((2, 4))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        m = burn_onnx.load(data, device=device)
        y = m(x)
        y = m(x)
    ours = [w for w in caught if "float64" in str(w.message)]
    if burn.float64 in device.backend.dtypes:
        assert not ours and y.dtype == burn.float64
    else:
        assert len(ours) == 1 and "float64" in str(ours[0].message) and y.dtype == burn.float32
    np.testing.assert_allclose(y.numpy(), reference(data, {"x": x})[0], rtol=1e-4, atol=1e-5)


def test_float16_model(device):
    data, _ = _linear_model(np.float16)
    x = R.standard_normal((2, 4)).astype(np.float16)
    y = burn_onnx.load(data, device=device)(x)
    np.testing.assert_allclose(
        y.numpy().astype(np.float32), reference(data, {"x": x})[0].astype(np.float32), rtol=1e-2, atol=1e-2
    )


def test_zero_size_and_rank0(device):
    nodes = [
        helper.make_node("Relu", ["x"], ["r"]),
        helper.make_node("ReduceSum", ["r"], ["total"], keepdims=0),
        helper.make_node("Shape", ["x"], ["s"]),
        helper.make_node("ReduceSum", ["r", "ax"], ["cols"], keepdims=0),
    ]
    x = np.zeros((0, 3), np.float32)
    model = make_model(
        nodes, {"x": x}, ["r", "total", "s", "cols"], {"ax": np.array([0], np.int64)}, opset=13
    )
    got = burn_onnx.load(model, device=device)(x)
    want = reference(model, {"x": x})
    assert got[0].shape == (0, 3) and got[1].shape == () and got[1].item() == 0.0
    assert got[2].tolist() == [0, 3] and got[3].shape == (3,)
    for g, w in zip(got, want):
        assert_close(g.numpy(), w, 1e-6, 1e-6)


def test_inputs_and_outputs_describe_the_graph():
    m = burn_onnx.load(B.transformer(17), device="cpu")
    assert [(i.name, i.shape, i.dtype) for i in m.inputs] == [
        ("tokens", ("batch", "seq"), "int64"),
        ("attention_mask", ("batch", "seq"), "int64"),
    ]
    assert len(m.outputs) == 2 and str(m.inputs[0]) == "tokens: int64[batchxseq]"


def test_input_checks():
    m = burn_onnx.load(B.transformer(17), device="cpu")
    tokens = np.zeros((1, 4), np.int64)
    with pytest.raises(burn.ShapeError, match="expects rank 2"):
        m(np.zeros(4, np.int64), tokens)
    with pytest.raises(burn.ShapeError, match="symbolic dim 'seq' is 4"):
        m(tokens, np.ones((1, 5), np.int64))
    with pytest.raises(burn.DTypeError, match="expects int64, got a float tensor"):
        m(np.zeros((1, 4), np.float32), tokens)
    with pytest.raises(TypeError, match="missing input"):
        m(tokens)
    with pytest.raises(TypeError, match="unknown input 'mask'"):
        m(tokens, mask=tokens)
    fixed = burn_onnx.load(B.old_cnn(9), device="cpu")
    with pytest.raises(burn.ShapeError, match=r"dim 2: 9 != 8"):
        fixed(np.zeros((2, 3, 9, 8), np.float32))


def test_int64_and_bool_inputs(device):
    nodes = [
        helper.make_node("Where", ["m", "a", "b"], ["w"]),
        helper.make_node("Gather", ["w", "i"], ["y"], axis=0),
    ]
    feeds = {
        "m": R.random((4, 2)) > 0.5,
        "a": _f(4, 2),
        "b": _f(4, 2),
        "i": np.array([[3, 0], [-1, 1]], np.int64),
    }
    model = make_model(nodes, feeds, ["y"], opset=13)
    assert_close(
        burn_onnx.load(model, device=device)(**feeds).numpy(), reference(model, feeds)[0], 1e-6, 1e-6
    )


# ------------------------------------------------------------------ params, records, training


def test_initializers_are_params_and_round_trip_through_a_record(tmp_path):
    data = B.resnet(13)
    m = burn_onnx.load(data, device="cpu")
    proto = onnx.load_from_string(data)
    floats = {t.name for t in proto.graph.initializer if t.data_type == TensorProto.FLOAT}
    params = {n.removeprefix("weights.") for n, _ in m.named_params()}
    states = {n.removeprefix("weights.") for n, e in m.named_entries() if isinstance(e, burn.nn.RunningState)}
    assert params | states == floats and states  # batch-norm mean/var are running states
    assert m.num_params() == sum(np.prod(t.dims) for t in proto.graph.initializer if t.name in params)
    x = _f(1, 3, 16, 16)
    before = m(x)[0].numpy()
    burn.record.save(m, tmp_path / "resnet")
    fresh = burn_onnx.load(data, device="cpu")
    for entry in fresh.params():
        entry.set(burn.zeros_like(entry.value))
    burn.record.load(fresh, tmp_path / "resnet")
    np.testing.assert_array_equal(fresh(x)[0].numpy(), before)


def test_fine_tuning_on_an_autodiff_device():
    data, _ = _linear_model()
    dev = burn.device("cpu", autodiff=True)
    m = burn_onnx.load(data, device=dev)
    x = burn.tensor(_f(8, 4), device=dev)
    loss = (m(x) - 1.0).abs().mean()
    grads = loss.backward()
    (w,) = m.params()
    assert w.value.grad(grads) is not None
    opt = burn.optim.SgdConfig().init()
    m = opt.step(0.1, m, grads)
    assert (m(x) - 1.0).abs().mean().item() < loss.item()


# ------------------------------------------------------------------ host-resolved shape arithmetic


def test_shape_arithmetic_never_reads_the_device(device, monkeypatch):
    """The transformer's Shape -> Gather -> Concat -> Reshape chains and its masks run on the host:
    no device tensor is read during a forward pass."""
    m = burn_onnx.load(B.transformer(17), device=device)
    tokens = R.integers(0, 20, (2, 6)).astype(np.int64)
    mask = np.ones((2, 6), np.int64)
    reads = []
    original = burn.Tensor.numpy

    def counting(self):
        if self.device != burn.device("cpu") or device == burn.device("cpu"):
            reads.append(self.shape)
        return original(self)

    monkeypatch.setattr(burn.Tensor, "numpy", counting)
    m(tokens, mask)
    m(tokens, mask)
    if device != burn.device("cpu"):
        assert reads == []
    static = m._runner.static
    reshapes = [n for n in m._runner.graph.nodes if n.op_type == "Reshape"]
    assert all(n.inputs[1] in static for n in reshapes)


def test_supported_ops_per_opset():
    table = burn_onnx.supported_ops()
    assert len(table) >= 140
    assert table["Conv"][0] == 6 and table["Conv"][-1] == onnx.defs.onnx_opset_version()
    assert "Gelu" not in burn_onnx.supported_ops(17) and "Gelu" in burn_onnx.supported_ops(20)
    assert "Upsample" in burn_onnx.supported_ops(9) and "Upsample" not in burn_onnx.supported_ops(13)
