"""Without a valid XDG_RUNTIME_DIR, burn-wgpu gives the process a private one before the Vulkan loader
starts, so Mesa does not print ``error: XDG_RUNTIME_DIR is invalid or not set`` once per adapter."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import tempfile

import pytest
from burn_wgpu import _device

pytestmark = pytest.mark.skipif(
    os.name != "posix" or sys.platform == "darwin", reason="XDG_RUNTIME_DIR is a Linux/BSD convention"
)


@pytest.mark.parametrize("value", [None, "", "relative/dir"], ids=["unset", "empty", "relative"])
def test_burn_info_prints_no_xdg_runtime_dir_error(value):
    env = {k: v for k, v in os.environ.items() if k != "XDG_RUNTIME_DIR" and not k.startswith("BURN_DISABLE")}
    if value is not None:
        env["XDG_RUNTIME_DIR"] = value
    proc = subprocess.run(
        [sys.executable, "-m", "burn", "info"], env=env, capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    assert "XDG_RUNTIME_DIR" not in proc.stderr, proc.stderr
    backends = proc.stdout.split("Backends:")[1].split("Metric collectors:")[0]
    assert any(line.split()[:1] == ["wgpu"] for line in backends.splitlines())  # wgpu was probed


@pytest.fixture
def tmpdir_here(tmp_path, monkeypatch):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    monkeypatch.setenv("XDG_RUNTIME_DIR", "")  # recorded, so the test's changes are undone
    monkeypatch.delenv("XDG_RUNTIME_DIR")
    return tmp_path


def test_private_dir_is_0700_and_owned_by_the_user(tmpdir_here):
    _device.ensure_runtime_dir()
    path = os.environ["XDG_RUNTIME_DIR"]
    assert path == str(tmpdir_here / f"burn-runtime-{os.getuid()}")
    info = os.lstat(path)
    assert stat.S_ISDIR(info.st_mode) and stat.S_IMODE(info.st_mode) == 0o700 and info.st_uid == os.getuid()
    os.chmod(path, 0o755)  # reused on the next start, with its mode put back
    os.environ["XDG_RUNTIME_DIR"] = "not/absolute"
    _device.ensure_runtime_dir()
    assert os.environ["XDG_RUNTIME_DIR"] == path and stat.S_IMODE(os.stat(path).st_mode) == 0o700


def test_a_valid_value_is_left_alone(tmpdir_here, monkeypatch):
    own = tmpdir_here / "mine"
    own.mkdir()
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(own))
    _device.ensure_runtime_dir()
    assert os.environ["XDG_RUNTIME_DIR"] == str(own)
    assert not (tmpdir_here / f"burn-runtime-{os.getuid()}").exists()


def test_a_squatted_name_is_never_used(tmpdir_here):
    target = tmpdir_here / "elsewhere"
    target.mkdir()
    (tmpdir_here / f"burn-runtime-{os.getuid()}").symlink_to(target)
    _device.ensure_runtime_dir()
    path = os.environ["XDG_RUNTIME_DIR"]
    assert os.path.dirname(path) == str(tmpdir_here) and os.path.basename(path).startswith("burn-runtime-")
    assert not os.path.islink(path) and stat.S_IMODE(os.lstat(path).st_mode) == 0o700
