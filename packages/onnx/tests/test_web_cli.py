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
