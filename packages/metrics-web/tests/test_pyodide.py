"""burn-core, burn-train and burn-metrics-web inside real Pyodide (the npm package, under Node).

The wheels are built from this checkout (``pip wheel --no-deps --no-build-isolation``), pluggy's wheel
comes from PyPI, and ``tests/pyodide/run.mjs`` installs them into Pyodide and runs
``tests/pyodide/scenario.py``: plugin discovery through entry points, the web collectors (each
source present or failing soft), burn_train's event processor inline on a synthetic event stream, and
the ``web`` renderer in console and HTML mode. No numpy and no threads exist in there.

The npm package and pluggy's wheel are cached in ``$BURN_PYODIDE_CACHE`` (default
``~/.cache/burn-pyodide``): the first run downloads them (~15 MB), later runs are offline. Skips
with the reason when Node.js or npm is missing.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
DRIVER = HERE / "pyodide"
PACKAGES = HERE.parents[1]  # packages/
WHEEL_SOURCES = ("core", "train", "metrics-web")
# what loadPyodide reads from the package folder: with these present it needs no network
CORE_FILES = ("pyodide.mjs", "pyodide.asm.js", "pyodide.asm.wasm", "python_stdlib.zip", "pyodide-lock.json")
RESULT = "BURN_PYODIDE_RESULT "


def _pinned_version() -> str:
    return json.loads((DRIVER / "package.json").read_text())["dependencies"]["pyodide"]


def _cache_root() -> Path:
    return Path(os.environ.get("BURN_PYODIDE_CACHE") or Path.home() / ".cache" / "burn-pyodide")


def _run(
    cmd: list[str], cwd: Path, timeout: float, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=timeout, env=env)


def _installed_version(package: Path) -> str | None:
    try:
        return json.loads((package / "package.json").read_text())["version"]
    except (OSError, ValueError, KeyError):
        return None


@pytest.fixture(scope="module")
def pyodide_package() -> Path:
    """The npm ``pyodide`` package folder, installed into the cache on first use."""
    node, npm = shutil.which("node"), shutil.which("npm")
    if node is None or npm is None:
        pytest.skip(f"the Pyodide test needs Node.js >= 18 and npm on PATH (node: {node}, npm: {npm})")
    version = _pinned_version()
    folder = _cache_root() / f"pyodide-{version}"
    package = folder / "node_modules" / "pyodide"
    if _installed_version(package) != version or not all((package / f).is_file() for f in CORE_FILES):
        folder.mkdir(parents=True, exist_ok=True)
        for name in ("package.json", "package-lock.json"):
            shutil.copyfile(DRIVER / name, folder / name)
        done = _run([npm, "ci", "--no-audit", "--no-fund", "--loglevel=error"], folder, timeout=600)
        if done.returncode != 0:
            pytest.fail(f"npm ci of pyodide {version} in {folder} failed:\n{done.stdout}\n{done.stderr}")
    missing = [f for f in CORE_FILES if not (package / f).is_file()]
    assert not missing, (
        f"the npm pyodide {version} package lacks {missing}: loadPyodide would need the network"
    )
    return package


def cached_wheel(name: str, version: str, python: str | None = None) -> Path:
    """The pure-Python wheel of ``name==version`` from PyPI, downloaded once into the cache
    (``python``: the Python version pip picks it for, when Pyodide's differs from ours)."""
    folder = _cache_root() / "wheels"
    found = sorted(folder.glob(f"{name}-{version}-py3-none-any.whl"))
    if not found:
        cmd = [sys.executable, "-m", "pip", "download", f"{name}=={version}", "--no-deps"]
        cmd += ["--only-binary=:all:", "--disable-pip-version-check", "-q", "-d", str(folder)]
        if python is not None:
            cmd.append(f"--python-version={python}")
        done = _run(cmd, HERE, timeout=300)
        found = sorted(folder.glob(f"{name}-{version}-py3-none-any.whl"))
        if not found:
            pytest.fail(f"pip download {name}=={version} failed:\n{done.stdout}\n{done.stderr}")
    return found[0]


def _pluggy_wheel() -> Path:
    """pluggy's wheel (the version installed here, pure Python), downloaded once into the cache."""
    return cached_wheel("pluggy", metadata.version("pluggy"))


@pytest.fixture(scope="module")
def wheels(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    out = tmp_path_factory.mktemp("wheels")
    done = _run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "--disable-pip-version-check",
            "-q",
            "-w",
            str(out),
            *(str(PACKAGES / p) for p in WHEEL_SOURCES),
        ],
        HERE,
        timeout=300,
    )
    built = sorted(out.glob("*.whl"))
    assert done.returncode == 0 and len(built) == len(WHEEL_SOURCES), (
        f"pip wheel failed:\n{done.stdout}\n{done.stderr}"
    )
    return [*built, _pluggy_wheel()]


@pytest.fixture(scope="module")
def result(pyodide_package: Path, wheels: list[Path]) -> dict:
    env = {**os.environ, "BURN_PYODIDE_DIR": str(pyodide_package)}
    done = _run(
        [shutil.which("node"), str(DRIVER / "run.mjs"), *map(str, wheels)], DRIVER, timeout=180, env=env
    )
    lines = [line for line in done.stdout.splitlines() if line.startswith(RESULT)]
    log = (
        f"exit status {done.returncode}\n--- stdout\n{done.stdout[-6000:]}\n--- stderr\n{done.stderr[-6000:]}"
    )
    assert lines, f"run.mjs printed no result:\n{log}"
    data = json.loads(lines[-1][len(RESULT) :])
    assert done.returncode == 0 and data["ok"], f"the Pyodide scenario failed: {data.get('error')}\n{log}"
    return data


def test_wheels_install_and_plugins_load_in_pyodide(result: dict) -> None:
    names = [name.split("-")[0] for name in result["installed"]]
    assert names == ["burn_core", "burn_metrics_web", "burn_train", "pluggy"]
    available = result["plain"]["available"]
    assert available["web-timing"] == [True, ""] and available["web-wasm-heap"] == [True, ""]
    assert available["cpu-use"][0] is False and "psutil" in available["cpu-use"][1]


def test_missing_browser_apis_fail_soft_under_node(result: dict) -> None:
    available = result["plain"]["available"]
    assert available["web-js-heap"] == [False, "performance.memory is not available here"]
    assert available["web-gpu"][0] is False and "navigator" in available["web-gpu"][1]
    node_major = int(result["node"].lstrip("v").split(".")[0])
    if node_major < 21:  # Node 21 added globalThis.navigator
        assert available["web-cpu-cores"] == [False, "navigator is not available here"]
        assert result["plain"]["cpu_cores"] is None
    else:
        assert available["web-cpu-cores"] == [True, ""] and result["plain"]["cpu_cores"] >= 1


def test_processor_runs_inline_with_web_metrics(result: dict) -> None:
    plain = result["plain"]
    # every step measured (the first of each epoch only starts the clock), checked in Pyodide against
    # Python's clock; here: one sample per remaining step, each at least the 2 ms of busy work
    steps = plain["step_times"]
    assert {k: len(v) for k, v in steps.items()} == {"train-1": 5, "valid-1": 2, "train-2": 5, "valid-2": 2}
    assert all(v >= 2.0 for series in steps.values() for v in series)
    assert all(mb > 1 for mb in plain["wasm_heap"])
    lines = plain["console"]
    assert lines[0].startswith("[start] 2 epoch(s) from epoch 1; metrics: Loss, Step Time, Wasm Heap")
    assert lines[-1] == "[end] training finished"
    assert sum(line.startswith("[train] epoch ") for line in lines) == 2


def test_injected_browser_apis_are_read(result: dict) -> None:
    browser = result["browser"]
    assert browser["gpu"]["JS Heap Used"] == 12.345678
    assert browser["gpu"]["CPU Cores"] == 7
    assert browser["gpu"]["WebGPU Max Buffer"] == 268.435456
    assert browser["info"]["vendor"] == "burn-test"
    assert browser["frames"] >= 10
    # the scenario's own checks (Python side, then JavaScript side) all ran
    assert browser["checks"] > result["plain"]["checks"] > 50 and result["js_checks"] >= 14
