"""Servers for burn-remote's tests: ``burn remote serve`` started as a subprocess (``--backend cpu``, a
free port) by fixtures; ``start_server`` starts extra ones with their own options."""

from __future__ import annotations

import itertools
import os
import secrets
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

START_TIMEOUT = 60.0  # seconds for a server to print its URL (a loaded CI machine imports slowly)


@dataclass
class ServerProcess:
    """A running ``burn remote serve``: its URL, token and process; ``log`` collects its stderr."""

    url: str
    token: str | None
    proc: subprocess.Popen
    log: list[str] = field(default_factory=list)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(10)

    def wait_log(self, text: str, timeout: float = 10.0) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if any(text in line for line in self.log):
                return True
            time.sleep(0.05)
        return False


def launch(tmp: Path, *args: str, token: str | None = None, port: int = 0) -> ServerProcess:
    cmd = [sys.executable, "-m", "burn", "remote", "serve", "--backend", "cpu", "--port", str(port), "-v"]
    if token is not None:
        path = tmp / f"token-{secrets.token_hex(4)}"
        path.write_text(token + "\n")
        cmd += ["--token-file", str(path)]
    env = {k: v for k, v in os.environ.items() if not k.startswith("BURN_REMOTE_")}
    proc = subprocess.Popen([*cmd, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    server = ServerProcess("", token, proc)

    def pump() -> None:
        assert proc.stderr is not None
        for line in proc.stderr:
            server.log.append(line)

    threading.Thread(target=pump, daemon=True).start()
    ready: list[str] = []

    def first_line() -> None:
        assert proc.stdout is not None
        ready.append(proc.stdout.readline())

    reader = threading.Thread(target=first_line, daemon=True)
    reader.start()
    reader.join(START_TIMEOUT)
    if not ready or "serving" not in ready[0]:
        proc.kill()
        raise RuntimeError(f"burn remote serve did not start: {ready} {''.join(server.log)[-2000:]}")
    server.url = ready[0].split()[-1]
    return server


@pytest.fixture(scope="session")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    """One token-protected cpu server for the session's tests."""
    srv = launch(tmp_path_factory.mktemp("server"), token=secrets.token_hex(16))
    yield srv
    srv.stop()


@pytest.fixture
def start_server(tmp_path: Path) -> Iterator[Any]:
    """``start_server(*args, token=None)``: a server of this test (stopped after it)."""
    started: list[ServerProcess] = []

    def start(*args: str, token: str | None = None, port: int = 0) -> ServerProcess:
        srv = launch(tmp_path, *args, token=token, port=port)
        started.append(srv)
        return srv

    yield start
    for srv in started:
        srv.stop()


_sessions = itertools.count(100)


@pytest.fixture
def remote(server: ServerProcess) -> Iterator[Any]:
    """A fresh remote device (its own session: a new device index) on the session's server; the session
    ends after the test (the server holds at most --max-sessions)."""
    import burn
    from burn_remote import remote_backend

    dev = burn.device(f"remote:{next(_sessions)}", url=server.url, token=server.token)
    yield dev
    try:
        remote_backend(dev).close()
    except Exception:  # it could not connect
        pass
