"""``burn onnx check`` and the command hook: the subcommand exists only through burn-onnx's plugin."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from burn import _cli, plugins
from burn_onnx_tests import _builders as B
from onnx import TensorProto, helper


@pytest.fixture
def fresh_plugins(monkeypatch):
    monkeypatch.delenv("BURN_DISABLE_PLUGINS", raising=False)
    monkeypatch.delenv("BURN_DISABLE_PLUGIN_AUTOLOAD", raising=False)
    plugins.reload()
    yield monkeypatch
    plugins.reload()


def test_check_prints_inputs_outputs_histogram(tmp_path, capsys, fresh_plugins):
    path = tmp_path / "resnet.onnx"
    path.write_bytes(B.resnet(13))
    assert _cli.main(["onnx", "check", str(path)]) == 0
    out = capsys.readouterr().out
    assert "Inputs:\n  x  float32  [N, 3, 16, 16]" in out
    assert "Ops (" in out and "  Conv" in out and "BatchNormalization" in out
    assert "Supported: every node can run" in out


def test_check_lists_what_is_unsupported(tmp_path, capsys, fresh_plugins):
    graph = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["a"]), helper.make_node("Frobnicate", ["a"], ["y"], name="frob")],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
        [helper.make_empty_tensor_value_info("y")],
    )
    path = tmp_path / "bad.onnx"
    path.write_bytes(
        helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString()
    )
    assert _cli.main(["onnx", "check", str(path), "--json"]) == 1
    report = json.loads(capsys.readouterr().out)
    assert report["ops"] == {"Frobnicate": 1, "Relu": 1}
    assert report["unsupported"] == [
        {
            "op_type": "Frobnicate",
            "domain": "",
            "opset": 17,
            "name": "frob",
            "reason": "no converter for this op type",
        }
    ]
    assert _cli.main(["onnx", "check", str(path)]) == 1
    assert "Unsupported (1 node(s)):\n  Frobnicate (ai.onnx opset 17) 'frob'" in capsys.readouterr().out


def test_check_of_a_truncated_file(tmp_path, capsys, fresh_plugins):
    path = tmp_path / "cut.onnx"
    path.write_bytes(B.resnet(13)[:500])
    assert _cli.main(["onnx", "check", str(path)]) == 2
    assert "burn onnx check:" in capsys.readouterr().err


def test_burn_help_and_info_list_the_command(capsys, fresh_plugins):
    with pytest.raises(SystemExit):
        _cli.main(["--help"])
    assert "onnx" in capsys.readouterr().out
    assert _cli.main(["info"]) == 0
    out = capsys.readouterr().out
    assert "burn-onnx" in out and "Commands (burn COMMAND --help):" in out
    commands = out.split("Commands (burn COMMAND --help):")[1]
    assert "onnx" in commands.split("\n\n")[0]


def test_without_the_plugin_the_command_says_how_to_get_it(capsys, fresh_plugins):
    fresh_plugins.setenv("BURN_DISABLE_PLUGINS", "burn-onnx")
    plugins.reload()
    assert _cli.main(["onnx", "check", "x.onnx"]) == 2
    assert "command 'onnx' (from burn-onnx) is disabled by BURN_DISABLE_PLUGINS" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        _cli.main(["--help"])
    assert "onnx" not in capsys.readouterr().out


def test_console_script(tmp_path):
    path = tmp_path / "m.onnx"
    path.write_bytes(B.mobilenet(17))
    proc = subprocess.run(
        [sys.executable, "-m", "burn", "onnx", "check", str(path)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert "HardSwish" in proc.stdout
