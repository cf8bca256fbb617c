#!/usr/bin/env python3
"""One-command set-up and run for burn-py, on a fresh machine.

    python3 dev.py train [ARGS...]   # set up, then train the example CNN with the live dashboard
    python3 dev.py test [PYTEST ARGS...]  # set up, then run the whole test suite

Set-up is idempotent: a virtual environment in .venv with every workspace package installed editable
(requirements-dev.txt), re-installed only when requirements or package metadata change. On Debian/Ubuntu
as root, ``test`` also installs (``apt-get update`` first) Mesa's Vulkan drivers (``mesa-vulkan-drivers``:
lavapipe, so the wgpu backend runs on the CPU) and ``chromium-headless-shell`` (else ``chromium``) for
the WebGPU page tests; without root or apt those tests skip with the reason.

After set-up, ``train`` replaces this process with the training script (``os.execve``; a child that
is waited for on Windows), so Ctrl-C, the dashboard's keys and the exit code are the script's own:
0 done, 1 error, 2 bad arguments, 130 interrupted (see ``python3 dev.py train --help``).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent
VENV = ROOT / ".venv"
STAMP = VENV / ".burn-dev-stamp"


def _venv_python() -> Path:
    return VENV / ("Scripts/python.exe" if os.name == "nt" else "bin/python")


def _requirements_hash() -> str:
    h = hashlib.sha256()
    for path in [ROOT / "requirements-dev.txt", *sorted(ROOT.glob("packages/*/pyproject.toml"))]:
        h.update(path.read_bytes())
    return h.hexdigest()


def _run(cmd: list[str], **kwargs) -> None:
    print("+", " ".join(str(c) for c in cmd), flush=True)
    subprocess.run(cmd, check=True, **kwargs)


def setup() -> Path:
    if not _venv_python().exists():
        _run([sys.executable, "-m", "venv", str(VENV)])
    digest = _requirements_hash()
    if not STAMP.exists() or STAMP.read_text() != digest:
        _run(
            [str(_venv_python()), "-m", "pip", "install", "-q", "-r", str(ROOT / "requirements-dev.txt")],
            cwd=ROOT,
        )
        STAMP.write_text(digest)
    return _venv_python()


def _ensure_lavapipe() -> None:
    """Mesa's software Vulkan driver lets the wgpu tests run without a GPU (best effort)."""
    icds = list(Path("/usr/share/vulkan/icd.d").glob("lvp_icd*.json"))
    if icds or not shutil.which("apt-get") or os.geteuid() != 0:
        return
    try:
        env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
        _run(["apt-get", "update", "-qq"], env=env)
        _run(["apt-get", "install", "-y", "-qq", "mesa-vulkan-drivers"], env=env)
    except (subprocess.CalledProcessError, OSError) as exc:
        print(f"warning: could not install mesa-vulkan-drivers ({exc}); wgpu tests will skip", flush=True)


def _ensure_browser() -> None:
    """Debian's headless Chromium for the WebGPU page tests (best effort; Playwright's own browser
    download is not used: the tests point Playwright at this executable)."""
    have = any(Path(p).exists() for p in ("/usr/lib/chromium/chromium-headless-shell", "/usr/bin/chromium"))
    if have or not shutil.which("apt-get") or os.geteuid() != 0:
        return
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    try:
        _run(["apt-get", "update", "-qq"], env=env)
    except (subprocess.CalledProcessError, OSError) as exc:
        print(f"warning: apt-get update failed ({exc})", flush=True)
    for package in ("chromium-headless-shell", "chromium"):
        try:
            _run(["apt-get", "install", "-y", "-qq", package], env=env)
            return
        except (subprocess.CalledProcessError, OSError) as exc:
            print(f"warning: could not install {package} ({exc})", flush=True)
    print("warning: no Chromium; the browser tests of burn_wgpu.web will skip", flush=True)


def _hand_over(cmd: list[str], env: dict[str, str]) -> int:
    """Run ``cmd`` as if the user had typed it: the same process, terminal and signals (POSIX exec).

    A child would share the terminal's Ctrl-C, but this process would then die of KeyboardInterrupt
    first, print a traceback and (``subprocess.call``) kill the child before it wrote its summary.
    """
    sys.stdout.flush()
    sys.stderr.flush()
    if os.name != "nt":
        os.execve(cmd[0], cmd, env)  # does not return
    proc = subprocess.Popen(cmd, env=env)
    while True:  # Windows: the console sends Ctrl-C to the child too; wait for it to finish cleanly
        try:
            return proc.wait()
        except KeyboardInterrupt:
            continue


def main(argv: list[str]) -> int:
    if not argv or argv[0] not in ("train", "test", "setup"):
        print(__doc__)
        return 2
    cmd, rest = argv[0], argv[1:]
    if cmd == "test":
        _ensure_lavapipe()
        _ensure_browser()
    python = setup()
    if cmd == "setup":
        return 0
    if cmd == "train":
        os.chdir(ROOT)
        env = dict(os.environ, BURN_TRAIN_PROG=f"python3 {Path(sys.argv[0]).name} train")
        return _hand_over([str(python), str(ROOT / "examples" / "train_digits.py"), *rest], env)
    return subprocess.call([str(python), "-m", "pytest", *rest], cwd=ROOT)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
