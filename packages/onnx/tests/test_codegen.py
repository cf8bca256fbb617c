"""``burn onnx codegen``: the generated module imports, loads its record and matches ``burn_onnx.load``
and onnxruntime; it passes ruff; unsupported nodes are listed all at once."""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
import sys
from pathlib import Path

import burn
import burn_onnx
import numpy as np
import pytest
from burn_onnx_tests import _builders as B
from onnx import TensorProto, helper, numpy_helper

REPO = Path(__file__).resolve().parents[3]


def _w(rng: np.random.Generator, name: str, *shape: int, scale: float = 0.3) -> object:
    return numpy_helper.from_array((rng.standard_normal(shape) * scale).astype(np.float32), name)


def _model(nodes: list, inputs: list, outputs: list, inits: list, opset: int = 17) -> bytes:
    graph = helper.make_graph(nodes, "g", inputs, outputs, inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    return model.SerializeToString()


def mlp() -> bytes:
    rng = np.random.default_rng(0)
    nodes = [
        helper.make_node("Flatten", ["x"], ["flat"], axis=1),
        helper.make_node("Gemm", ["flat", "w1", "b1"], ["h1"], transB=1, alpha=0.5),
        helper.make_node("Relu", ["h1"], ["a1"]),
        helper.make_node("MatMul", ["a1", "w2"], ["m2"]),
        helper.make_node("Add", ["m2", "b2"], ["h2"]),
        helper.make_node("Tanh", ["h2"], ["a2"]),
        helper.make_node("MatMul", ["a2", "w3"], ["m3"]),
        helper.make_node("Sigmoid", ["m3"], ["probs"]),
    ]
    inits = [
        _w(rng, "w1", 16, 12),
        _w(rng, "b1", 16),
        _w(rng, "w2", 16, 8),
        _w(rng, "b2", 8),
        _w(rng, "w3", 8, 3),
    ]
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3, 2, 2])
    y = helper.make_tensor_value_info("probs", TensorProto.FLOAT, ["N", 3])
    return _model(nodes, [x], [y], inits)


def transformer_block(d: int = 8, heads: int = 2, seq: int = 5, vocab: int = 11) -> bytes:
    """Embedding + positions, pre-norm attention and an erf-GELU feed-forward, static shapes."""
    rng = np.random.default_rng(1)
    dh = d // heads
    nodes, inits = [], [_w(rng, "embedding", vocab, d, scale=1.0), _w(rng, "positions", seq, d)]
    inits += [numpy_helper.from_array(np.array([0, 0, heads, dh], np.int64), "split_shape")]
    inits += [numpy_helper.from_array(np.array([0, 0, d], np.int64), "merge_shape")]
    inits += [numpy_helper.from_array(np.array(np.sqrt(dh), np.float32), "scale")]
    inits += [_w(rng, n, d) for n in ("ln1_s", "ln1_b", "ln2_s", "ln2_b")]
    node = helper.make_node
    nodes += [
        node("Gather", ["embedding", "tokens"], ["emb"]),
        node("Add", ["emb", "positions"], ["x0"]),
        node("LayerNormalization", ["x0", "ln1_s", "ln1_b"], ["h"], axis=-1, epsilon=1e-5),
    ]
    for p in "qkv":
        inits += [_w(rng, f"w{p}", d, d), _w(rng, f"b{p}", d)]
        nodes += [
            node("MatMul", ["h", f"w{p}"], [f"{p}_mm"]),
            node("Add", [f"{p}_mm", f"b{p}"], [f"{p}_lin"]),
            node("Reshape", [f"{p}_lin", "split_shape"], [f"{p}_split"]),
            node("Transpose", [f"{p}_split"], [p], perm=[0, 2, 3, 1] if p == "k" else [0, 2, 1, 3]),
        ]
    inits += [_w(rng, "wo", d, d), _w(rng, "bo", d), _w(rng, "w_up", d, 4 * d), _w(rng, "b_up", 4 * d)]
    inits += [_w(rng, "w_down", 4 * d, d)]
    inits += [
        numpy_helper.from_array(np.array(v, np.float32), n) for n, v in (("sqrt2", 2**0.5), ("one", 1.0))
    ]
    nodes += [
        node("MatMul", ["q", "k"], ["qk"]),
        node("Div", ["qk", "scale"], ["scores"]),
        node("Softmax", ["scores"], ["attn"], axis=-1),
        node("MatMul", ["attn", "v"], ["ctx"]),
        node("Transpose", ["ctx"], ["ctx_t"], perm=[0, 2, 1, 3]),
        node("Reshape", ["ctx_t", "merge_shape"], ["merged"]),
        node("MatMul", ["merged", "wo"], ["o_mm"]),
        node("Add", ["o_mm", "bo"], ["o"]),
        node("Add", ["x0", "o"], ["x1"]),
        node("LayerNormalization", ["x1", "ln2_s", "ln2_b"], ["h2"], axis=-1),
        node("MatMul", ["h2", "w_up"], ["up_mm"]),
        node("Add", ["up_mm", "b_up"], ["up"]),
        node("Div", ["up", "sqrt2"], ["up_s"]),
        node("Erf", ["up_s"], ["erf"]),
        node("Add", ["erf", "one"], ["erf1"]),
        node("Mul", ["up", "erf1"], ["gelu2"]),
        node("Mul", ["gelu2", "half"], ["gelu"]),
        node("MatMul", ["gelu", "w_down"], ["down"]),
        node("Add", ["x1", "down"], ["hidden"]),
        node("Concat", ["x1", "hidden"], ["both"], axis=-1),
        node("Gather", ["both", "zero"], ["first"], axis=1),
    ]
    inits += [numpy_helper.from_array(np.array(0.5, np.float32), "half")]
    inits += [numpy_helper.from_array(np.array(0, np.int64), "zero")]
    tokens = helper.make_tensor_value_info("tokens", TensorProto.INT64, [2, seq])
    outs = [helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in ("hidden", "first")]
    return _model(nodes, [tokens], outs, inits)


def _generated(tmp_path: Path, data: bytes, name: str) -> tuple[object, Path]:
    src = tmp_path / f"{name.lower()}.onnx"
    src.write_bytes(data)
    path = burn_onnx.codegen(src, tmp_path / "out", name=name)
    spec = importlib.util.spec_from_file_location(f"generated_{name.lower()}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    model = getattr(module, name)(device=burn.device("cpu"))
    burn.record.load(model, path.with_suffix(".safetensors"))
    return model, path


def _check(tmp_path: Path, data: bytes, name: str, feeds: dict[str, np.ndarray]) -> Path:
    import onnxruntime as ort

    model, path = _generated(tmp_path, data, name)
    args = [burn.tensor(v) for v in feeds.values()]
    got = model(*args)
    got = got if isinstance(got, tuple) else (got,)
    ref = burn_onnx.load(data, device="cpu")(*args)
    ref = ref if isinstance(ref, tuple) else (ref,)
    session = ort.InferenceSession(data, providers=["CPUExecutionProvider"])
    expected = session.run(None, feeds)
    assert len(got) == len(ref) == len(expected)
    for g, r, e in zip(got, ref, expected):
        np.testing.assert_allclose(g.numpy(), r.numpy(), rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(g.numpy(), e, rtol=1e-4, atol=1e-4)
    return path


def test_mlp_matches_import_and_onnxruntime(tmp_path):
    x = np.random.default_rng(2).standard_normal((4, 3, 2, 2)).astype(np.float32)
    path = _check(tmp_path, mlp(), "Mlp", {"x": x})
    text = path.read_text()
    assert "self.linear1 = nn.LinearConfig(12, 16).init(device)" in text
    assert "self.linear2 = nn.LinearConfig(16, 8).init(device)" in text  # MatMul + Add: one layer
    assert "nn.LinearConfig(8, 3, bias=False)" in text
    assert "probs = F.sigmoid(" in text and "return probs" in text
    assert text.startswith('"""Mlp: generated by ``burn onnx codegen``') and "burn.record.load(model" in text


@pytest.mark.parametrize("builder", ["resnet", "mobilenet"])
def test_cnn_matches_import_and_onnxruntime(tmp_path, builder):
    x = np.random.default_rng(3).standard_normal((2, 3, 16, 16)).astype(np.float32)
    path = _check(tmp_path, getattr(B, builder)(13), builder.capitalize(), {"x": x})
    text = path.read_text()
    assert "nn.Conv2dConfig((3, 8), (3, 3)" in text and "nn.BatchNormConfig(8).init(device)" in text


def norm_decoder(opset: int, per_group: bool) -> bytes:
    """ConvTranspose (stride 2, symmetric pads, output padding, bias) -> GroupNormalization ->
    Relu -> ConvTranspose (2 groups, dilation, no bias) -> InstanceNormalization."""
    rng = np.random.default_rng(5)
    node = helper.make_node
    g_scale = 2 if per_group else 6  # opset 18: one scale per group; 21: per channel
    nodes = [
        node(
            "ConvTranspose",
            ["x", "w1", "b1"],
            ["u"],
            strides=[2, 2],
            pads=[1, 1, 1, 1],
            output_padding=[1, 1],
        ),
        node("GroupNormalization", ["u", "gs", "gb"], ["n"], num_groups=2, epsilon=1e-4),
        node("Relu", ["n"], ["r"]),
        node("ConvTranspose", ["r", "w2"], ["v"], group=2, dilations=[2, 1]),
        node("InstanceNormalization", ["v", "is", "ib"], ["y"], epsilon=1e-3),
    ]
    inits = [
        _w(rng, "w1", 4, 6, 3, 3),
        _w(rng, "b1", 6),
        _w(rng, "gs", g_scale, scale=1.0),
        _w(rng, "gb", g_scale),
        _w(rng, "w2", 6, 2, 2, 3),
        _w(rng, "is", 4, scale=1.0),
        _w(rng, "ib", 4),
    ]
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 4, 5, 5])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    return _model(nodes, [x], [y], inits, opset)


@pytest.mark.parametrize(("opset", "per_group"), [(18, True), (21, False)])
def test_conv_transpose_and_norms_match_import(tmp_path, opset, per_group):
    x = np.random.default_rng(6).standard_normal((2, 4, 5, 5)).astype(np.float32)
    path = _check(tmp_path, norm_decoder(opset, per_group), "Decoder", {"x": x})
    text = path.read_text()
    assert (
        "nn.ConvTranspose2dConfig((4, 6), (3, 3), stride=(2, 2), padding=(1, 1), padding_out=(1, 1))" in text
    )
    assert "nn.ConvTranspose2dConfig((6, 4), (2, 3), dilation=(2, 1), groups=2, bias=False)" in text
    assert "nn.GroupNormConfig(2, 6, epsilon=0.0001)" in text
    assert "nn.InstanceNormConfig(4, epsilon=0.001)" in text


def video_stem() -> bytes:
    """Conv (3-d) -> Relu -> MaxPool (3-d, dilation, ceil_mode) -> AveragePool (3-d, pads, padding
    not counted) -> GlobalAveragePool."""
    rng = np.random.default_rng(7)
    node = helper.make_node
    nodes = [
        node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1, 1, 1]),
        node("Relu", ["c"], ["r"]),
        node(
            "MaxPool",
            ["r"],
            ["m"],
            kernel_shape=[2, 2, 2],
            strides=[1, 2, 2],
            dilations=[2, 1, 1],
            ceil_mode=1,
        ),
        node(
            "AveragePool", ["m"], ["a"], kernel_shape=[3, 3, 3], pads=[1, 1, 1, 1, 1, 1], count_include_pad=0
        ),
        node("GlobalAveragePool", ["a"], ["y"]),
    ]
    inits = [_w(rng, "w", 4, 2, 3, 3, 3), _w(rng, "b", 4)]
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 2, 6, 7, 7])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    return _model(nodes, [x], [y], inits)


def test_3d_pools_match_import_and_onnxruntime(tmp_path):
    x = np.random.default_rng(8).standard_normal((2, 2, 6, 7, 7)).astype(np.float32)
    text = _check(tmp_path, video_stem(), "VideoStem", {"x": x}).read_text()
    assert "nn.MaxPool3dConfig((2, 2, 2), stride=(1, 2, 2), ceil_mode=True, dilation=(2, 1, 1))" in text
    assert (
        "nn.AvgPool3dConfig((3, 3, 3), stride=(1, 1, 1), padding=(1, 1, 1), count_include_pad=False)" in text
    )


def test_transformer_block_matches_import_and_onnxruntime(tmp_path):
    tokens = np.random.default_rng(4).integers(0, 11, (2, 5)).astype(np.int64)
    path = _check(tmp_path, transformer_block(), "Block", {"tokens": tokens})
    text = path.read_text()
    assert "self.embedding1 = nn.EmbeddingConfig(11, 8).init(device)" in text
    assert "self.layer_norm1 = nn.LayerNormConfig(8).init(device)" in text
    assert "self.positions = Param(burn.zeros((5, 8), device=device))" in text
    assert ".reshape(linear1.shape[0], linear1.shape[1], 2, 4)" in text
    assert "F.softmax(" in text and "burn.cat([" in text


def test_generated_code_passes_ruff(tmp_path):
    ruff = shutil.which("ruff") or str(Path(sys.executable).parent / "ruff")
    if not Path(ruff).exists():
        pytest.skip("ruff is not installed")
    paths = []
    for name, data in (("Mlp", mlp()), ("Resnet", B.resnet(13)), ("Block", transformer_block())):
        (tmp_path / name).mkdir()
        src = tmp_path / name / "m.onnx"
        src.write_bytes(data)
        paths.append(str(burn_onnx.codegen(src, tmp_path / name, name=name)))
    config = ["--config", str(REPO / "pyproject.toml")] if (REPO / "pyproject.toml").exists() else []
    check = subprocess.run([ruff, "check", *config, *paths], capture_output=True, text=True)
    assert check.returncode == 0, check.stdout + check.stderr
    fmt = subprocess.run(
        [ruff, "format", "--check", "--diff", *config, *paths], capture_output=True, text=True
    )
    assert fmt.returncode == 0, fmt.stdout + fmt.stderr


def test_cli_writes_module_and_record(tmp_path):
    src = tmp_path / "mlp.onnx"
    src.write_bytes(mlp())
    out = tmp_path / "gen"
    run = subprocess.run(
        [sys.executable, "-m", "burn", "onnx", "codegen", str(src), "-o", str(out), "--name", "Classifier"],
        capture_output=True,
        text=True,
    )
    assert run.returncode == 0, run.stderr
    assert (out / "classifier.py").exists() and (out / "classifier.safetensors").exists()
    assert "classifier.py" in run.stdout


def test_unsupported_ops_are_listed_all_at_once(tmp_path):
    nodes = [
        helper.make_node("Relu", ["x"], ["a"]),
        helper.make_node("Frobnicate", ["a"], ["b"], name="frob"),
        helper.make_node("Shape", ["x"], ["s"], name="shape_of_x"),
        helper.make_node("ConstantOfShape", ["s"], ["c"], name="fill"),
        helper.make_node("Add", ["b", "c"], ["y"]),
    ]
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n"])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["n"])
    src = tmp_path / "odd.onnx"
    src.write_bytes(_model(nodes, [x], [y], []))
    with pytest.raises(burn_onnx.UnsupportedOnnxError) as info:
        burn_onnx.codegen(src, tmp_path / "out")
    ops = {n.op_type for n in info.value.nodes}
    assert ops == {"Frobnicate", "Shape", "ConstantOfShape"}
    assert "no code emitter" in str(info.value) and "frob" in str(info.value)
    assert not (tmp_path / "out" / "net.py").exists()
