"""Every documented failure of the commands is one line on stderr and exit 2, names what is wrong (the
file, the device, the flag) and writes nothing (issue 32: these printed 30-60-line tracebacks, exited 1
and created the artifacts folder)."""

from __future__ import annotations

import importlib.util
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
TRAIN = [sys.executable, str(ROOT / "examples" / "train_digits.py")]
BURN = [sys.executable, "-m", "burn"]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _one_line_exit_2(cmd: list[str], cwd: Path, *needles: str, env: dict[str, str] | None = None) -> str:
    environ = {k: v for k, v in os.environ.items() if not k.startswith("BURN_REMOTE")}
    proc = subprocess.run(
        cmd, cwd=cwd, capture_output=True, text=True, timeout=240, env={**environ, **(env or {})}
    )
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert len(lines) == 1, proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr
    for needle in needles:
        assert needle in lines[0], lines[0]
    return lines[0]


def test_train_on_a_device_that_does_not_exist(tmp_path):
    _one_line_exit_2([*TRAIN, "--devices", "wgpu:9", "--artifacts", "art"], tmp_path, "wgpu")
    assert not (tmp_path / "art").exists()


REMOTE = pytest.mark.skipif(
    importlib.util.find_spec("websockets") is None or importlib.util.find_spec("burn_remote") is None,
    reason="burn-remote and websockets are not installed",
)


@REMOTE
def test_train_on_a_remote_server_that_is_not_there(tmp_path):
    url = f"ws://127.0.0.1:{_free_port()}"
    cmd = [*TRAIN, "--backend", "remote", "--remote-url", url, "--artifacts", "art"]
    _one_line_exit_2(cmd, tmp_path, "cannot connect", url)
    assert not (tmp_path / "art").exists()


@REMOTE
def test_train_on_a_remote_server_without_its_token(tmp_path):
    token = tmp_path / "token"
    token.write_text("s3cret-token")
    port = _free_port()
    server = subprocess.Popen(
        [*BURN, "remote", "serve", "--backend", "cpu", "--port", str(port), "--token-file", str(token)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:  # until the server accepts connections
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                assert server.poll() is None, server.stdout.read() if server.stdout else ""
                time.sleep(0.2)
        cmd = [*TRAIN, "--backend", "remote", "--remote-url", f"ws://127.0.0.1:{port}", "--artifacts", "art"]
        _one_line_exit_2(cmd, tmp_path, "authentication failed", "BURN_REMOTE_TOKEN")
        assert not (tmp_path / "art").exists()
    finally:
        server.terminate()
        server.wait(timeout=30)


def test_resume_from_a_garbage_state_file_names_the_file(tmp_path):
    folder = tmp_path / "art" / "checkpoint"
    folder.mkdir(parents=True)
    (folder / "state-1.json").write_text("garbage{")
    cmd = [*TRAIN, "--artifacts", "art", "--resume", "1", "--epochs", "2"]
    _one_line_exit_2(cmd, tmp_path, "state-1.json", "not a checkpoint state")
    assert sorted(p.name for p in folder.iterdir()) == ["state-1.json"]


@pytest.mark.skipif(importlib.util.find_spec("cupy") is not None, reason="CuPy is installed: cuda can serve")
def test_remote_serve_on_cuda_without_cupy(tmp_path):
    _one_line_exit_2([*BURN, "remote", "serve", "--backend", "cuda"], tmp_path, "burn remote", "cupy")


@pytest.mark.parametrize("command", [["web", "export"], ["onnx", "check"], ["onnx", "codegen"]])
@pytest.mark.parametrize("content", [None, b"not an onnx model"])
def test_onnx_commands_on_a_missing_or_garbage_file(tmp_path, command, content):
    path = tmp_path / "model.onnx"
    if content is not None:
        path.write_bytes(content)
    extra = ["-o", str(tmp_path / "out")] if command[-1] in ("export", "codegen") else []
    line = _one_line_exit_2([*BURN, *command, str(path), *extra], tmp_path, "model.onnx")
    assert line.startswith(f"burn {' '.join(command)}: ") and "web export: web export" not in line
    assert not (tmp_path / "out").exists()


def test_native_schedule_names_missing_inputs(tmp_path):
    pytest.importorskip("wgpu")
    import burn
    import numpy as np

    if not any(i.name == "wgpu" and i.available for i in burn.backends()):
        pytest.skip("no WebGPU adapter")
    import burn_wgpu.web as web
    from burn import nn

    web.export(nn.Relu(), np.zeros((1, 4), np.float32), tmp_path / "page")
    with pytest.raises(ValueError, match=r"feeds lack the input\(s\) 'input' float32\[1, 4\]"):
        web.NativeSchedule(tmp_path / "page").run({})


@pytest.mark.parametrize(
    ("cmd", "needle"),
    [
        ([*BURN, "launch", "-n", "0", "x.py"], "-n/--np"),
        ([*BURN, "remote", "serve", "--port", "abc"], "--port"),
        ([*BURN, "web", "export"], "model"),
        ([*BURN, "nosuch"], "nosuch"),
        ([*TRAIN, "--epochs", "0"], "--epochs"),
        ([*TRAIN, "--backend", "tpu"], "--backend"),
    ],
)
def test_bad_arguments_are_one_line_without_the_usage_block(tmp_path, cmd, needle):
    line = _one_line_exit_2(cmd, tmp_path, needle, "--help")
    assert not line.startswith("usage:")
