"""What the browser benchmarks (``bench_web``, ``bench_web_train``) share: burn-wgpu's test helpers loaded
from their folder (``_browser``: Debian's headless Chromium launched with SwiftShader's WebGPU adapter,
a page server on 127.0.0.1, the console log; ``_web_models``), the browser started or the reason it
cannot start reported as the script's JSON, and the page script that counts the GPU work a page does.

The scripts import this module as ``_web_browser`` (their folder is first on ``sys.path``).
"""

from __future__ import annotations

import importlib.util
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

TESTS = Path(__file__).resolve().parents[1] / "packages" / "backend-wgpu" / "tests"
# what the reports say about where the pages ran
BROWSER = "chromium-headless-shell, WebGPU on SwiftShader"


def load_test_helper(name: str, prefix: str) -> Any:
    """burn-wgpu's test helper module ``name`` (``_browser``, ``_web_models``), registered as
    ``{prefix}_{name}`` (that folder is not a package and not on ``sys.path``)."""
    spec = importlib.util.spec_from_file_location(f"{prefix}_{name}", TESTS / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def start_browser(prefix: str) -> Any | None:
    """A started ``_browser.Browser`` (the caller closes it), or None after printing ``{"error": why}``
    where Playwright or Chromium is missing (the script then exits with 2)."""
    browser_mod = load_test_helper("_browser", prefix)
    reason = browser_mod.unavailable()
    if reason:
        print(json.dumps({"error": reason}))
        return None
    return browser_mod.Browser()


def count_js(counts: str, wraps: Sequence[tuple[str, str, str]]) -> str:
    """A page function (run once per page, before any GPU work) that counts GPU calls into
    ``window[counts]``: each (class, method, key) of ``wraps`` adds one to that key per call of
    ``class.prototype.method``. A step's work is the difference of the counters around it."""
    keys = ", ".join(f"{key}: 0" for key in dict.fromkeys(key for _, _, key in wraps))
    calls = "".join(f'  wrap({cls}.prototype, "{method}", "{key}");\n' for cls, method, key in wraps)
    return (
        "() => {\n"
        f"  if (window.{counts}) return;\n"
        f"  const c = (window.{counts} = {{ {keys} }});\n"
        "  const wrap = (proto, name, key) => {\n"
        "    const f = proto[name];\n"
        "    proto[name] = function (...a) { c[key]++; return f.apply(this, a); };\n"
        "  };\n"
        f"{calls}}}"
    )
