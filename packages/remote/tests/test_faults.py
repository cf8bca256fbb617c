"""Faults: a server that dies or hangs makes the client's next use raise ``RemoteError`` within the
timeout; a restarted server needs ``burn_remote.reconnect``; a client that dies has its tensors freed."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import burn
import burn_remote
import pytest
from burn_remote import RemoteError


def test_server_killed_mid_session(start_server):
    srv = start_server()
    dev = burn.device("remote", url=srv.url, timeout=5)
    x = burn.ones((8,), device=dev)
    assert x.sum().item() == 8.0
    srv.proc.kill()
    srv.proc.wait(10)
    start = time.monotonic()
    with pytest.raises(RemoteError, match="connection to .* was lost"):
        (x + 1).numpy()
    assert time.monotonic() - start < 5
    time.sleep(0.2)
    with pytest.raises(RemoteError, match="reconnect"):  # the next op itself, not only reads
        x * 2


def test_hung_server_is_detected_within_the_timeout(start_server):
    srv = start_server()
    dev = burn.device("remote:1", url=srv.url, timeout=2)
    x = burn.ones((8,), device=dev)
    assert x.sum().item() == 8.0
    os.kill(srv.proc.pid, signal.SIGSTOP)
    try:
        start = time.monotonic()
        with pytest.raises(RemoteError, match="was lost"):
            (x + 1).numpy()
        assert time.monotonic() - start < 2 * 2 + 1  # keep-alive: ping interval + pong timeout
    finally:
        os.kill(srv.proc.pid, signal.SIGCONT)


def test_server_restart_needs_a_new_session(start_server):
    srv = start_server()
    port = int(srv.url.rsplit(":", 1)[1])
    dev = burn.device("remote:2", url=srv.url, timeout=5, autodiff=True)
    old = burn.ones((3,), device=dev)
    assert old.sum().item() == 3.0
    srv.stop()
    start_server(port=port)
    with pytest.raises(RemoteError):
        (old * 2).numpy()
    burn_remote.reconnect(dev)
    with pytest.raises(RemoteError, match="session that has ended"):
        old * 2
    assert (burn.ones((3,), device=dev) * 2).tolist() == [2.0, 2.0, 2.0]


CLIENT = """
import sys, burn
dev = burn.device("remote", url=sys.argv[1], token=sys.argv[2])
keep = [burn.ones((256, 256), device=dev) * i for i in range(5)]
keep[-1].sum().item()
print("ready", flush=True)
import time; time.sleep(60)
"""


def _opened(server):
    return [line for line in server.log if " opened from " in line]


def test_killed_client_frees_its_tensors(server):
    before = len(_opened(server))
    proc = subprocess.Popen(
        [sys.executable, "-c", CLIENT, server.url, server.token], stdout=subprocess.PIPE, text=True
    )
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
        deadline = time.monotonic() + 10
        while len(_opened(server)) == before and time.monotonic() < deadline:
            time.sleep(0.05)
        sid = _opened(server)[before].split("session ")[1].split()[0]
        proc.kill()
        assert server.wait_log(f"session {sid} closed", timeout=10), "".join(server.log[-5:])
    finally:
        proc.kill()
        proc.wait(10)
