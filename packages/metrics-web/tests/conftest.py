"""Test fixtures: a stand-in for Pyodide's ``js`` and ``pyodide_js`` modules, in CPython.

``browser`` puts a fake ``js`` (globalThis) and ``pyodide_js`` into ``sys.modules`` and sets
``sys.platform`` to ``"emscripten"``; its fields (``performance``, ``navigator``, ``document``) are
plain objects that tests change to remove or break one source at a time (fakes in ``_fakes.py``).
"""

from __future__ import annotations

import sys
import types

import pytest

from ._fakes import FakeGpu, FakePerformance


@pytest.fixture
def browser(monkeypatch: pytest.MonkeyPatch) -> types.SimpleNamespace:
    """A fake Pyodide in a Chromium page: every source present. Returns the fake ``js`` module."""
    from burn_train import _sync

    js = types.ModuleType("js")
    js.performance = FakePerformance()
    js.performance.memory = types.SimpleNamespace(
        usedJSHeapSize=50_000_000, totalJSHeapSize=80_000_000, jsHeapSizeLimit=4_000_000_000
    )
    js.navigator = types.SimpleNamespace(hardwareConcurrency=8, gpu=FakeGpu())
    pyodide_js = types.ModuleType("pyodide_js")
    pyodide_js._module = types.SimpleNamespace(
        wasmMemory=types.SimpleNamespace(buffer=types.SimpleNamespace(byteLength=33_554_432)),
        HEAP8=types.SimpleNamespace(length=33_554_432),
    )
    monkeypatch.setitem(sys.modules, "js", js)
    monkeypatch.setitem(sys.modules, "pyodide_js", pyodide_js)
    monkeypatch.setattr(sys, "platform", "emscripten")
    _sync.reset_thread_probe()  # burn_train caches "no threads" on emscripten; forget it after the test
    yield types.SimpleNamespace(js=js, pyodide_js=pyodide_js)
    _sync.reset_thread_probe()
