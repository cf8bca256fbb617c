"""Real Hugging Face ``transformers`` exports (``fixtures/hf``: BERT, DistilBERT, GPT-2, a T5 encoder,
ViT and a Whisper encoder from tiny random-weight configs, written by ``fixtures/make_hf_exports.py``)
run through burn-onnx on every available device and compared with onnxruntime and with PyTorch's own
outputs (saved next to each model), so neither torch nor transformers is needed here.

Each is exported at opset 17 (PyTorch's TorchScript exporter: attention spelt out as MatMul/Softmax,
masks built from Shape/Expand/Where) and at opset 23 (the dynamo exporter: the fused ``Attention`` op
and ``Gelu``), with static shapes; BERT, GPT-2 and T5 also at opset 17 with symbolic batch and sequence
(``_dynamic``). T5's opset-23 export fails inside torch 2.13 (the generator says why).

Tolerances: onnxruntime and PyTorch differ from each other by up to 1.5e-6 on these float32 models;
burn-onnx is held to atol 1e-5 / rtol 1e-4 against both on cpu, and atol 2e-5 on other devices (GPU
exp/erf/tanh are a few ulp off numpy's).
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import burn
import burn_onnx
import numpy as np
import pytest
from burn_onnx_tests._util import reference, run_burn

HF = Path(__file__).resolve().parent / "fixtures" / "hf"
EXPORTS = sorted(p.name.removesuffix(".onnx") for p in HF.glob("*_opset*.onnx"))

# codegen: the exports whose every node has an emitter; the rest with the ops still missing one
CODEGEN_RUNS = {"vit_opset17", "whisper_encoder_opset17"}
CODEGEN_MISSING = {
    "bert_opset17": {"Gather", "And", "Expand", "IsNaN"},
    "bert_opset17_dynamic": {"And", "Expand", "Gather", "IsNaN", "Range", "Shape", "Slice"},
    "bert_opset23": {"GatherND", "And", "Attention"},
    "distilbert_opset17": {"Gather", "And", "Expand", "IsNaN"},
    "distilbert_opset23": {"GatherND", "And", "Attention"},
    "gpt2_opset17": {"Gather", "And", "Expand", "IsNaN", "Split"},
    "gpt2_opset17_dynamic": {"And", "Expand", "Gather", "IsNaN", "Range", "Reshape", "Shape", "Split"},
    "gpt2_opset23": {"GatherND", "And", "Split", "Attention"},
    "t5_encoder_opset17": {"Gather", "And", "Expand"},
    "t5_encoder_opset17_dynamic": {
        "And",
        "ConstantOfShape",
        "Expand",
        "Gather",
        "Min",
        "Range",
        "Reshape",
        "Shape",
    },
    "vit_opset23": {"Attention"},
    "whisper_encoder_opset23": {"Attention"},
}


def _case(export: str) -> tuple[bytes, dict[str, np.ndarray], list[np.ndarray]]:
    """(model bytes, inputs, PyTorch's outputs)."""
    saved = np.load(HF / f"{export.split('_opset')[0]}.npz")
    feeds = {k.removeprefix("in."): saved[k] for k in saved.files if k.startswith("in.")}
    outs = [saved[f"out.{i}"] for i in range(sum(k.startswith("out.") for k in saved.files))]
    return (HF / f"{export}.onnx").read_bytes(), feeds, outs


def test_fixtures_are_all_here_and_small() -> None:
    assert len(EXPORTS) == 14, EXPORTS
    sizes = [p.stat().st_size for p in HF.iterdir()]
    assert max(sizes) < 2_000_000 and sum(sizes) < 8_000_000
    assert set(EXPORTS) == CODEGEN_RUNS | set(CODEGEN_MISSING)


@pytest.mark.parametrize("export", EXPORTS)
def test_hf_export_matches_onnxruntime_and_pytorch(export: str, device: burn.Device) -> None:
    data, feeds, torch_outs = _case(export)
    want = reference(data, feeds)
    got = run_burn(data, feeds, device)
    atol = 1e-5 if device.backend.name == "ndarray" else 2e-5
    assert len(got) == len(want) == len(torch_outs)
    for i, (g, w, t) in enumerate(zip(got, want, torch_outs)):
        assert g.dtype == w.dtype == np.float32 and g.shape == w.shape == t.shape, f"output {i}"
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=atol, err_msg=f"output {i} vs onnxruntime")
        np.testing.assert_allclose(g, t, rtol=1e-4, atol=atol, err_msg=f"output {i} vs PyTorch")


@pytest.mark.parametrize(
    "export", ["bert_opset17_dynamic", "gpt2_opset17_dynamic", "t5_encoder_opset17_dynamic"]
)
def test_hf_export_with_other_shapes_on_one_model(export: str) -> None:
    """The ``_dynamic`` exports keep batch and sequence symbolic: one loaded model, other shapes."""
    data, feeds, _ = _case(export)
    model = burn_onnx.load(data, device="cpu")
    for shape in ((2, 3), (2, 7), (3, 11), (1, 7)):
        cut = {k: np.resize(v, shape) for k, v in feeds.items()}
        want = reference(data, cut)
        got = model(**cut)
        got = got if isinstance(got, tuple) else (got,)
        assert len(got) == len(want)
        for g, w in zip(got, want):
            np.testing.assert_allclose(g.numpy(), w, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("export", sorted(CODEGEN_RUNS))
def test_hf_export_codegen_matches_import(export: str, tmp_path: Path) -> None:
    data, feeds, torch_outs = _case(export)
    path = burn_onnx.codegen(HF / f"{export}.onnx", tmp_path / "out", name="Net")
    spec = importlib.util.spec_from_file_location(f"generated_{export}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    model = module.Net(device=burn.device("cpu"))
    burn.record.load(model, path.with_suffix(".safetensors"))
    got = model(*[burn.tensor(v) for v in feeds.values()])
    got = got if isinstance(got, tuple) else (got,)
    imported = run_burn(data, feeds, burn.device("cpu"))
    for g, r, t in zip(got, imported, torch_outs):
        np.testing.assert_allclose(g.numpy(), r, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(g.numpy(), t, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("export", sorted(CODEGEN_MISSING))
def test_hf_export_codegen_lists_the_ops_it_lacks(export: str, tmp_path: Path) -> None:
    """Which node types keep each export from codegen today; an emitter added for one of them makes
    this fail, so the sets here (and ``CODEGEN_RUNS``) follow."""
    with pytest.raises(burn_onnx.UnsupportedOnnxError) as info:
        burn_onnx.codegen(HF / f"{export}.onnx", tmp_path / "out", name="Net")
    missing = {line.split()[0] for line in str(info.value).splitlines()[1:] if line.startswith("  ")}
    assert missing == CODEGEN_MISSING[export]
