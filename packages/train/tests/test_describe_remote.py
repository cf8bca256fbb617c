"""A run on burn-remote names what it trains on (issue 32): the server's device and adapter and where
the server is, so ``--backend remote`` on a software adapter says "software" like a local run does."""

from __future__ import annotations

import importlib.util
import os
import secrets
import subprocess
import sys

import burn
import pytest
from burn_train.learner._describe import compact_device, describe_device

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("burn_remote") is None or importlib.util.find_spec("websockets") is None,
    reason="burn-remote and websockets are not installed",
)


def _wgpu_usable() -> bool:
    spec = next((b for b in burn.backends() if b.name == "wgpu"), None)
    return spec is not None and spec.available


@pytest.mark.parametrize("served", ["cpu", "wgpu"])
def test_a_remote_device_names_the_served_device_its_adapter_and_the_server(tmp_path, served):
    if served == "wgpu" and not _wgpu_usable():
        pytest.skip("wgpu backend unavailable")
    token = secrets.token_hex(8)
    (tmp_path / "token").write_text(token)
    cmd = [sys.executable, "-m", "burn", "remote", "serve", "--backend", served, "--port", "0"]
    env = {k: v for k, v in os.environ.items() if not k.startswith("BURN_REMOTE_")}
    proc = subprocess.Popen(
        [*cmd, "--token-file", str(tmp_path / "token")], stdout=subprocess.PIPE, text=True, env=env
    )
    try:
        assert proc.stdout is not None
        url = proc.stdout.readline().split()[-1]  # "serving ... on ws://127.0.0.1:PORT"
        assert url.startswith("ws://"), url
        dev = burn.device("remote:3", url=url, token=token)
        text = describe_device(dev)
        if served == "cpu":
            assert text == f"remote:3 (cpu (numpy) at {url})"
        else:
            local = describe_device(burn.device("wgpu"))  # the same adapter, seen here
            adapter = local.split(" (", 1)[1].removesuffix(")").removesuffix(", software")
            assert text.startswith(f"remote:3 (wgpu:0 ({adapter}) at {url}")
            assert text.endswith(", software)") == local.endswith(", software)")
            assert compact_device(text) == f"remote:3 (wgpu:0 at {url}" + text[text.rindex(url) + len(url) :]
    finally:
        proc.kill()
        proc.wait(10)
