"""Every documented failure of the commands is one line on stderr and exit 2, names what is wrong (the
file, the device, the flag) and writes nothing (issue 32: these printed 30-60-line tracebacks, exited 1
and created the artifacts folder)."""

from __future__ import annotations

import importlib.util
import os
import shlex
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


# --------------------------------------------------------------------------- every command, every documented
# failure: (id, argv after `burn`, needles of the one stderr line, what must be installed). Files named in
# argv are made by _files: good.onnx (a real model), garbage.onnx, empty.txt, binary.txt (not UTF-8),
# garbage.pem, afile (a file where a folder is expected), folder/ (a folder where a file is expected),
# x.py (a script); any other name does not exist. `out` is never created.
HAS = {name: importlib.util.find_spec(name) is not None for name in ("burn_onnx", "burn_wgpu", "cupy")}
HAS["burn_remote"] = all(
    importlib.util.find_spec(n) is not None for n in ("burn_remote", "websockets", "msgpack")
)
HAS["burn_train"] = importlib.util.find_spec("burn_train") is not None
USAGE = [  # (what must be installed, argv after `burn` as shell words, needles of the stderr line...)
    ("remote,-cupy", "remote serve --backend cuda", "--backend cuda", "cupy"),
    ("remote", "remote serve --backend tpu", "--backend tpu", "unknown backend"),
    ("remote", "remote serve --device -1", "--device", ">= 0"),
    ("remote", "remote serve --port 99999", "--port", "0-65535"),
    ("remote", "remote serve --port abc", "--port", "'abc'"),
    ("remote", "remote serve --max-frame-mib -1", "--max-frame-mib", "> 0"),
    ("remote", "remote serve --max-sessions 0", "--max-sessions", ">= 1"),
    ("remote", "remote serve --token-file token.txt", "--token-file token.txt", "no such file"),
    ("remote", "remote serve --token-file empty.txt", "--token-file empty.txt", "empty"),
    ("remote", "remote serve --token-file folder", "--token-file folder", "is a folder"),
    ("remote", "remote serve --token-file binary.txt", "--token-file binary.txt", "UTF-8"),
    ("remote", "remote serve --tls-cert c.pem --tls-key k.pem", "--tls-cert c.pem", "no such file"),
    ("remote", "remote serve --tls-cert garbage.pem --tls-key garbage.pem", "--tls-cert garbage.pem", "PEM"),
    ("remote", "remote serve --tls-cert garbage.pem", "--tls-key", "both"),
    ("remote", "remote serve --host 0.0.0.0", "--host 0.0.0.0", "--token-file"),
    ("remote", "remote", "SUBCOMMAND"),
    ("train", "launch -n 0 x.py", "-n/--np", ">= 1"),
    ("train", "launch x.py", "-n/--np"),
    ("train", "launch -n 2", "script"),
    ("train", "launch -n 2 train.py", "script train.py", "no such file"),
    ("train", "launch -n 2 folder", "script folder", "__main__.py"),
    ("train", "launch -n 2 --launcher ./no-mpiexec x.py", "--launcher ./no-mpiexec", "no such program"),
    ("train", 'launch -n 2 --launcher-args "\'-hosts" x.py', "--launcher-args", "No closing quotation"),
    ("train", "launch -n 2 --timeout -1 x.py", "--timeout", "> 0"),
    ("onnx", "onnx check model.onnx", "model.onnx", "No such file"),
    ("onnx", "onnx check garbage.onnx", "garbage.onnx", "not a valid ONNX model"),
    ("onnx", "onnx check folder", "folder", "cannot read"),
    ("onnx", "onnx codegen garbage.onnx -o out", "garbage.onnx", "not a valid ONNX model"),
    ("onnx", "onnx codegen good.onnx -o out --name class", "--name 'class'", "class name"),
    ("onnx", "onnx codegen good.onnx -o afile", "-o afile", "not a folder"),
    ("web,onnx", "web export garbage.onnx -o out", "garbage.onnx", "not a valid ONNX model"),
    ("web,onnx", "web export model.onnx -o out", "model.onnx", "No such file"),
    ("web,onnx", "web export good.onnx -o out --input x=1xq", "--input", "x=1xq"),
    ("web,onnx", "web export good.onnx -o out --input nope=1x4", "--input", "'nope'"),
    ("web,onnx", "web export good.onnx -o afile", "-o afile", "not a folder"),
    ("web,onnx", "web export good.onnx -o out --adapter 9", "--adapter 9"),
    ("web,onnx", "web export good.onnx -o out --adapter -1", "--adapter", ">= 0"),
    ("", "autotune", "ACTION"),
    ("", "autotune frob", "'frob'"),
    ("", "info --timeout 0", "--timeout", "positive"),
    ("", "info --timeout soon", "--timeout", "'soon'"),
    ("", "frobnicate", "'frobnicate'"),
]
NEEDS = {
    "remote": "burn_remote",
    "train": "burn_train",
    "onnx": "burn_onnx",
    "web": "burn_wgpu",
}  # web: the page
COMMAND_WORDS = {"remote", "serve", "launch", "onnx", "check", "codegen", "web", "export", "autotune", "info"}


def _files(folder: Path) -> None:
    (folder / "garbage.onnx").write_bytes(b"not an onnx model\x00\x01")
    (folder / "empty.txt").write_text("")
    (folder / "binary.txt").write_bytes(b"\xff\xfe\x00token")
    (folder / "garbage.pem").write_text("-----BEGIN CERTIFICATE-----\ngarbage\n")
    (folder / "afile").write_text("a file, not a folder")
    (folder / "folder").mkdir()
    (folder / "x.py").write_text("print('rank')\n")
    if HAS["burn_onnx"]:
        import burn
        import burn_onnx
        from burn import nn

        burn_onnx.export(nn.Relu(), [burn.zeros((1, 4))], str(folder / "good.onnx"), opset=17)


def _tree(folder: Path) -> list[tuple[str, int]]:
    return sorted(
        (str(p.relative_to(folder)), p.stat().st_size if p.is_file() else -1) for p in folder.rglob("*")
    )


def _skip_reason(needs: str) -> str | None:
    for need in filter(None, needs.split(",")):
        if need == "-cupy":
            if HAS["cupy"]:
                return "CuPy is installed: cuda can serve"
        elif not HAS[NEEDS[need]]:
            return f"{NEEDS[need]} (or its dependencies) not installed"
    return None


@pytest.mark.parametrize("case", USAGE, ids=[c[1].replace(" ", "_") for c in USAGE])
def test_every_command_failure_is_one_line_naming_the_argument(tmp_path, case):
    """`burn <command> ...` with a bad flag value, a missing/garbage/unreadable file or a missing optional
    dependency: exit 2, one stderr line `burn <command words>: ...` naming it, no traceback, no file."""
    needs, words, *needles = case
    reason = _skip_reason(needs)
    if reason:
        pytest.skip(reason)
    _files(tmp_path)
    before = _tree(tmp_path)
    argv = shlex.split(words)
    line = _one_line_exit_2([*BURN, *argv], tmp_path, *needles)
    command = [w for w in argv[:2] if w in COMMAND_WORDS]
    assert line.startswith(" ".join(["burn", *command]) + ": "), line
    assert _tree(tmp_path) == before  # nothing written: no `out` folder, no file


def _blocking(module: str) -> list[str]:
    """`burn` in a Python where `module` cannot be imported (as if it were not installed)."""
    code = f"import sys; sys.modules[{module!r}] = None; from burn._cli import main; sys.exit(main(sys.argv[1:]))"
    return [sys.executable, "-c", code]


@pytest.mark.skipif(not HAS["burn_remote"], reason="burn-remote and its dependencies are not installed")
def test_remote_serve_without_websockets_says_what_to_install(tmp_path):
    line = _one_line_exit_2(
        [*_blocking("websockets"), "remote", "serve"], tmp_path, "websockets", "burn-core[remote]"
    )
    assert line.startswith("burn remote serve: ")


def _uninstalled(dist: str) -> list[str]:
    """`burn` in a Python where distribution `dist` looks not installed: its plugins are skipped and its
    metadata is not found (as test_install_hints does in-process)."""
    code = (
        f"import os, sys; os.environ['BURN_DISABLE_PLUGINS'] = {dist!r}; from burn.plugins import _known; "
        f"real = _known._entry_point_names; _known._entry_point_names = lambda d: None if d == {dist!r} "
        "else real(d); from burn._cli import main; sys.exit(main(sys.argv[1:]))"
    )
    return [sys.executable, "-c", code]


@pytest.mark.skipif(not (HAS["burn_wgpu"] and HAS["burn_onnx"]), reason="burn-wgpu and burn-onnx are needed")
def test_web_export_without_burn_onnx_says_what_to_install(tmp_path):
    """`burn web` is burn-onnx's command (on top of burn-wgpu's web export): without burn-onnx there is
    no such command, and burn says which extra brings it."""
    _files(tmp_path)
    cmd = [*_uninstalled("burn-onnx"), "web", "export", "good.onnx", "-o", "out"]
    line = _one_line_exit_2(cmd, tmp_path, "command 'web'", "burn-core[onnx]")
    assert line.startswith("burn: ") and not (tmp_path / "out").exists()


@pytest.mark.skipif(not (HAS["burn_wgpu"] and HAS["burn_onnx"]), reason="burn-wgpu and burn-onnx are needed")
def test_web_export_without_burn_wgpu_says_what_to_install(tmp_path):
    _files(tmp_path)
    cmd = [*_blocking("burn_wgpu"), "web", "export", "good.onnx", "-o", "out"]
    line = _one_line_exit_2(cmd, tmp_path, "burn-wgpu", "burn-core[wgpu]")
    assert line.startswith("burn web export: ") and not (tmp_path / "out").exists()


@pytest.mark.skipif(not HAS["burn_remote"], reason="burn-remote and its dependencies are not installed")
def test_remote_serve_on_a_port_in_use(tmp_path):
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        cmd = [*BURN, "remote", "serve", "--port", str(port)]
        _one_line_exit_2(cmd, tmp_path, f"--port {port}", "already in use")


def test_autotune_show_lists_a_garbage_cache_file_by_name(tmp_path):
    folder = tmp_path / "autotune"
    folder.mkdir()
    (folder / "a.json").write_text("garbage{")
    (folder / "b.json").write_text("[1, 2]")
    proc = subprocess.run(
        [*BURN, "autotune", "show"],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "BURN_CACHE_DIR": str(tmp_path)},
    )
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr
    out = proc.stdout
    assert f"{folder / 'a.json'}\n  unreadable: not JSON" in out, out
    assert f"{folder / 'b.json'}\n  unreadable: not an autotune cache" in out, out


def test_native_schedule_names_unknown_inputs_and_wrong_arrays(tmp_path):
    pytest.importorskip("wgpu")
    import burn
    import numpy as np

    if not any(i.name == "wgpu" and i.available for i in burn.backends()):
        pytest.skip("no WebGPU adapter")
    import burn_wgpu.web as web
    from burn import nn

    web.export(nn.Relu(), np.zeros((1, 4), np.float32), tmp_path / "page")
    schedule = web.NativeSchedule(tmp_path / "page")
    declared = r"\(the page's inputs: 'input' float32\[1, 4\]\)"
    with pytest.raises(
        ValueError, match=r"lack the input\(s\) 'input' float32\[1, 4\]; no input named 'inpt' " + declared
    ):
        schedule.run({"inpt": np.zeros((1, 4))})
    with pytest.raises(
        ValueError, match=r"input 'input' float32\[1, 4\]: expected shape \[1, 4\], got \[2, 4\]"
    ):
        schedule.run({"input": np.zeros((2, 4))})
    with pytest.raises(
        TypeError, match=r"input 'input' float32\[1, 4\]: got an array of <U1, expected numbers"
    ):
        schedule.run({"input": np.array([list("abcd")])})
    with pytest.raises(
        TypeError, match=r"feeds must be a dict of input name -> array \('input' float32\[1, 4\]\), got list"
    ):
        schedule.run([np.zeros((1, 4))])  # type: ignore[arg-type]
    x = np.array([[-1.0, 0.0, 2.0, 3.0]])  # float64 is fine: it is converted to the page's float32
    np.testing.assert_array_equal(schedule.run({"input": x})["output"], np.maximum(x, 0).astype(np.float32))
    (tmp_path / "page" / "model.js").write_text("export const nothing = 1;\n")
    with pytest.raises(
        ValueError, match=r"model\.js: not a page of burn web export \(no /\*SCHEDULE\*/ block\)"
    ):
        web.NativeSchedule(tmp_path / "page")
