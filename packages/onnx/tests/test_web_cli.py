"""``burn web export MODEL.onnx -o OUT/``: burn-onnx's command, writing the page through burn-wgpu's web
export (the export itself is tested in burn-wgpu's test_web_export.py and test_web_browser.py)."""

from __future__ import annotations

import re

import burn
import pytest
from burn import _cli
from burn_onnx_tests import _builders as B


@pytest.fixture(scope="module")
def wgpu():
    pytest.importorskip("burn_wgpu", reason="the page is burn-wgpu's web export")
    info = next((i for i in burn.backends() if i.name == "wgpu"), None)
    if info is None or not info.available:
        pytest.skip(f"wgpu unavailable: {info.reason if info else 'not registered'}")


def test_cli_writes_the_page(wgpu, tmp_path, capsys):
    path = tmp_path / "m.onnx"
    path.write_bytes(B.mobilenet(17))
    code = _cli.main(["web", "export", str(path), "-o", str(tmp_path / "out"), "--input", "x=2x3x16x16"])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "x float32[2, 3, 16, 16]" in out and "1 submit per run" in out
    assert (tmp_path / "out" / "model.js").exists()
    code = _cli.main(["web", "export", str(path), "-o", str(tmp_path / "o3"), "--no-fusion"])
    fused, plain = (re.search(r"(\d+) dispatches", text) for text in (out, capsys.readouterr().out))
    assert code == 0 and fused and plain and int(fused.group(1)) < int(plain.group(1))
    assert _cli.main(["web", "export", str(path), "-o", str(tmp_path / "o2"), "--input", "x"]) == 2
    assert "NAME=DxDx" in capsys.readouterr().err


def test_input_shapes_are_parsed_or_refused_by_name():
    from burn_onnx._web import parse_shapes

    with pytest.raises(ValueError, match="NAME=DxDx"):
        parse_shapes(["x=1x0x3"])
    assert parse_shapes(["pixel_values=1x3x224x224"]) == {"pixel_values": (1, 3, 224, 224)}


def test_the_web_command_is_burn_onnxs():
    from burn.plugins import registry

    reg = registry()
    assert reg.provider("command", "web").dist == reg.provider("command", "onnx").dist == "burn-onnx"


def test_cli_writes_the_training_demo(wgpu, tmp_path, capsys):
    """``burn web train-demo digits -o OUT``: the page of burn_wgpu.web.train_demo (its browser test is
    burn-wgpu's test_web_train_demo.py); bad settings are one line and exit 2, nothing written."""
    import json

    out = tmp_path / "demo"
    code = _cli.main(["web", "train-demo", "digits", "-o", str(out), "--epochs", "2", "--batch-size", "40"])
    text = capsys.readouterr().out
    assert code == 0, text
    assert "2 epochs of 35 steps (40 items)" in text and "1 submit per step" in text
    assert {p.name for p in out.iterdir()} == {
        "index.html",
        "demo.js",
        "worker.js",
        "trainer.js",
        "weights.bin",
        "digits.bin",
        "demo.json",
    }
    settings = json.loads((out / "demo.json").read_text())
    assert settings["epochs"] == 2 and settings["batch_size"] == 40 and settings["lr"] == 0.02
    assert _cli.main(["web", "train-demo", "digits", "-o", str(tmp_path / "bad"), "--epochs", "0"]) == 2
    assert "epochs must be an int >= 1, got 0" in capsys.readouterr().err
    assert not (tmp_path / "bad").exists()
    with pytest.raises(SystemExit):
        _cli.main(["web", "train-demo", "cifar", "-o", str(tmp_path / "c")])
    assert "invalid choice: 'cifar'" in capsys.readouterr().err
