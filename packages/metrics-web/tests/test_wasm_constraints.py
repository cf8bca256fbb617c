"""CPython made to look like Pyodide: no numpy, no threads, ``sys.platform == "emscripten"``, a fake
``js``. burn's plugin layer, burn_train's processor and renderers and burn_metrics_web must import and
run as they are (the real thing is test_pyodide.py; this one needs no Node and runs everywhere)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

SCRIPT = textwrap.dedent(
    """
    import io, sys, threading, time, types
    sys.modules["numpy"] = None  # any `import numpy` now fails

    def refuse(self):
        raise RuntimeError("can't start new thread")

    threading.Thread.start = refuse
    sys.platform = "emscripten"
    js = types.ModuleType("js")
    js.performance = types.SimpleNamespace(now=lambda: time.perf_counter() * 1000.0)
    sys.modules["js"] = js
    sys.modules["pyodide_js"] = None  # not there: the wasm heap source fails soft

    import burn, burn.plugins, burn_train, burn_train.processor, burn_train.renderer
    from burn_metrics_web import WebMetric, WebRenderer

    reg = burn.plugins.registry()
    ours = ("burn-core", "burn-train", "burn-metrics-web")
    assert not [b for b in reg.broken if b.dist in ours], reg.broken
    available = {n: reg.collectors[n].is_available() for n in ("web-timing", "web-wasm-heap", "web-cpu-cores")}
    assert available["web-timing"] == (True, ""), available
    assert "pyodide_js" in available["web-wasm-heap"][1] and "navigator" in available["web-cpu-cores"][1]

    sys.path.insert(0, sys.argv[1])
    from _stream import MeanLoss, run_stream

    out = io.StringIO()
    hub = run_stream([MeanLoss(), WebMetric("step_time")], [MeanLoss()], WebRenderer(stream=out))
    assert hub.store.value("train", "Step Time", 2) > 0
    assert out.getvalue().splitlines()[-1] == "[end] training finished"
    loaded = sorted(m for m in sys.modules if m.split(".")[0] in ("numpy", "rich", "psutil", "safetensors"))
    assert loaded == ["numpy"] and sys.modules["numpy"] is None, loaded  # only the blocker
    assert threading.active_count() == 1
    print("OK", burn_train.processor.make_processor(hub).mode)
    """
)


def test_plugin_layer_processor_and_web_package_run_without_numpy_or_threads() -> None:
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(Path(__file__).parent)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, f"stdout:\n{done.stdout}\nstderr:\n{done.stderr}"
    assert done.stdout.strip().splitlines()[-1] == "OK inline"
