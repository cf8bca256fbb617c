"""burn-core, burn-train and burn-metrics-web inside real Pyodide inside a real headless Chromium.

The browser side of ``test_pyodide.py`` (Pyodide under Node), with the same cache and the same wheels:
the npm ``pyodide`` package (cached in ``$BURN_PYODIDE_CACHE``), the wheels built from this checkout,
pluggy's and micropip's wheels (downloaded once into the cache; micropip is not in the npm package).
A temp folder holds ``pyodide/`` (the package folder), ``wheels/`` and the driver
(``tests/pyodide/browser.html``, ``browser.mjs``, ``browser_scenario.py``, ``scenario.py``) and is
served over http on 127.0.0.1 to Debian's ``chromium-headless-shell`` (driven by Playwright, with
SwiftShader's WebGPU adapter, as burn-wgpu's web-export tests run it). In the page, micropip installs
the wheels from their URLs, the collectors are found through entry points and read against
Chromium's own ``performance.memory``, ``performance.now()``, ``navigator.hardwareConcurrency``,
WebGPU adapter and Pyodide's wasm heap, each also read directly from JavaScript; burn_train's
processor drives the ``web`` renderer into the real DOM. The page requests nothing outside 127.0.0.1.

Skips with the reason when Node.js/npm (for the cached npm package), Playwright or Chromium is missing.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from . import test_pyodide as node_test

HERE = Path(__file__).resolve().parent
DRIVER = HERE / "pyodide"
DRIVER_FILES = ("browser.html", "browser.mjs", "browser_scenario.py", "scenario.py")
# burn-wgpu's headless-Chromium helper (launch flags, the 127.0.0.1 server, request logging)
BROWSER_HELPER = HERE.parents[1] / "backend-wgpu" / "tests" / "_browser.py"

# the Node test's fixtures: the cached npm package folder and the wheels built from this checkout
pyodide_package = node_test.pyodide_package
wheels = node_test.wheels


def _browser_helper() -> ModuleType | None:
    name = "_burn_metrics_web_browser_helper"
    if name not in sys.modules:
        if not BROWSER_HELPER.is_file():
            return None
        spec = importlib.util.spec_from_file_location(name, BROWSER_HELPER)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


def _unavailable() -> str | None:
    helper = _browser_helper()
    if helper is None:
        return f"the headless-Chromium helper {BROWSER_HELPER} is missing"
    return helper.unavailable()


def _micropip_wheel(package: Path) -> Path:
    """micropip's wheel, the version the npm package's lock file pins (pure Python, from PyPI), cached."""
    lock = json.loads((package / "pyodide-lock.json").read_text())
    version = lock["packages"]["micropip"]["version"]
    python = ".".join(lock["info"]["python"].split(".")[:2])  # micropip needs Pyodide's Python
    return node_test.cached_wheel("micropip", version, python)


pytestmark = pytest.mark.skipif(
    _unavailable() is not None,
    reason=f"the Pyodide-in-Chromium test needs a headless Chromium: {_unavailable()}",
)


@pytest.fixture(scope="module")
def site(pyodide_package: Path, wheels: list[Path], tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The folder the page is served from."""
    root = tmp_path_factory.mktemp("pyodide-site")
    os.symlink(pyodide_package, root / "pyodide", target_is_directory=True)
    (root / "wheels").mkdir()
    for wheel in [*wheels, _micropip_wheel(pyodide_package)]:
        shutil.copyfile(wheel, root / "wheels" / wheel.name)
    for name in DRIVER_FILES:
        shutil.copyfile(DRIVER / name, root / name)
    return root


@pytest.fixture(scope="module")
def result(site: Path, wheels: list[Path]) -> dict[str, Any]:
    helper = _browser_helper()
    assert helper is not None
    browser = helper.Browser()
    try:
        page, log = browser.open(site, "browser.html")
        micropip = next(p.name for p in (site / "wheels").iterdir() if p.name.startswith("micropip-"))
        page.evaluate(
            "async (config) => (await import('./browser.mjs')).start(config)",
            {"wheels": [w.name for w in wheels], "micropip": micropip},
        )
        page.wait_for_function("window.burnResult !== undefined", timeout=120_000)
        data = page.evaluate("window.burnResult")
        page.close()
    finally:
        browser.close()
    data["log"] = log
    assert data["ok"], f"the Pyodide scenario failed in Chromium: {data.get('error')}\nlog: {log}"
    return data


def test_micropip_installs_the_wheels_from_the_page_server(result: dict[str, Any]) -> None:
    assert [d["dist"] for d in result["installed"]] == [
        "burn-core",
        "burn-metrics-web",
        "burn-train",
        "pluggy",
    ]
    for entry in result["installed"]:
        assert entry["wheel"].startswith(entry["dist"].replace("-", "_") + "-" + entry["version"] + "-")
    log = result["log"]
    base = log["base"][0]
    assert all(url.startswith(base + "/") for url in log["requests"]), log["requests"]
    requested = {url[len(base) :] for url in log["requests"]}
    assert {"/pyodide/pyodide.asm.wasm", "/pyodide/python_stdlib.zip"} <= requested
    assert {f"/wheels/{d['wheel']}" for d in result["installed"]} <= requested
    bad = [m for m in log["console"] if m.startswith("error")]
    assert not bad and not log["errors"], (bad, log["errors"])
    assert "HeadlessChrome" in result["user_agent"] or "Chrome" in result["user_agent"]


def test_every_web_collector_is_available_in_chromium(result: dict[str, Any]) -> None:
    available = result["chromium"]["available"]
    for name in ("web-timing", "web-js-heap", "web-wasm-heap", "web-cpu-cores", "web-gpu"):
        assert available[name] == [True, ""], (name, available[name])
    assert available["cpu-use"][0] is False and "psutil" in available["cpu-use"][1]


def test_js_heap_and_clock_are_chromiums(result: dict[str, Any]) -> None:
    heap = result["chromium"]["heap"]
    # checked in the page against direct reads of performance.memory; here: Chromium's plausible sizes
    assert 0.1 < heap["JS Heap Used"] <= heap["JS Heap Total"] <= heap["JS Heap Limit"]
    assert heap["JS Heap Limit"] > 100  # MB: V8's heap limit, never a toy value
    steps = result["chromium"]["step_times"]
    assert {k: len(v) for k, v in steps.items()} == {"train-1": 5, "valid-1": 2, "train-2": 5, "valid-2": 2}
    assert all(v >= 2.0 - 0.2 for series in steps.values() for v in series)


def test_webgpu_adapter_matches_the_pages_own_request(result: dict[str, Any]) -> None:
    gpu, info, adapter = result["chromium"]["gpu"], result["chromium"]["gpu_info"], result["adapter"]
    assert adapter["present"] and gpu["WebGPU Adapter"] == 1.0
    assert gpu["WebGPU Features"] == adapter["features"]
    assert gpu["WebGPU Max Buffer"] == adapter["maxBufferSize"] / 1e6
    assert gpu["WebGPU Max Storage Binding"] == adapter["maxStorageBufferBindingSize"] / 1e6
    assert gpu["WebGPU Max Workgroup Invocations"] == adapter["maxComputeInvocationsPerWorkgroup"]
    assert gpu["WebGPU Fallback"] == float(adapter["fallback"])
    assert info == {k: v for k, v in adapter["info"].items() if isinstance(v, str)}


def test_renderer_and_page_checks_ran(result: dict[str, Any]) -> None:
    chromium = result["chromium"]
    assert chromium["frames"] >= 10
    assert chromium["cores"] >= 1 and all(mb > 1 for mb in chromium["wasm_heap_samples"])
    assert chromium["checks"] > 40 and result["js_checks"] >= 9
