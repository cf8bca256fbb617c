"""The browser sources and ``WebCollector`` against a fake ``js`` (conftest), one source at a time."""

from __future__ import annotations

import math
import sys
import types

import pytest
from burn.plugins import registry
from burn_metrics_web import SOURCES, SourceUnavailable, WebCollector, source_available

from ._fakes import JsNull, adapter

GPU_KEYS = list(SOURCES["web-gpu"].keys)


def nan_keys(sample: dict[str, float], source: str) -> bool:
    return all(math.isnan(sample[k]) for k in SOURCES[source].keys)


# ---------------------------------------------------------------- outside Pyodide
def test_outside_pyodide_every_source_is_unavailable_with_the_reason() -> None:
    assert sys.platform != "emscripten"
    reg = registry()
    for name in SOURCES:
        spec = reg.collectors[name]
        assert spec.group == "metrics-wasm" and reg.provider("collector", name).dist == "burn-metrics-web"
        ok, reason = spec.is_available()
        assert not ok and "sys.platform == 'emscripten'" in reason and repr(sys.platform) in reason
    assert reg.provider("renderer", "web").dist == "burn-metrics-web"
    with pytest.raises(SourceUnavailable, match="need Pyodide"):
        WebCollector()


def test_registered_specs_follow_the_platform_at_run_time(browser) -> None:
    reg = registry()
    assert all(reg.collectors[name].is_available() == (True, "") for name in SOURCES)
    del browser.js.performance.memory
    assert reg.collectors["web-js-heap"].is_available() == (False, "performance.memory is not available here")
    built = reg.collectors["web-cpu-cores"].factory()
    assert built.name == "web-cpu-cores" and built.collect() == {"CPU Cores": 8.0}


# ---------------------------------------------------------------- one source each
def test_timing_steps_and_page_time(browser) -> None:
    perf = browser.js.performance
    collector = WebCollector(["web-timing"])
    perf.t = 1012.5
    assert collector.collect() == {"Page Time": 1.0125, "Step Time": 12.5}
    perf.t = 1030.0
    assert collector.collect() == {"Page Time": 1.03, "Step Time": 17.5}
    perf.t = 1100.0
    collector.restart()  # an epoch starts: the next step is measured from here
    perf.t = 1104.25
    assert collector.collect()["Step Time"] == 4.25


def test_js_heap_in_megabytes_and_its_soft_failures(browser) -> None:
    collector = WebCollector(["web-js-heap"])
    assert collector.collect() == {"JS Heap Used": 50.0, "JS Heap Total": 80.0, "JS Heap Limit": 4000.0}
    browser.js.performance.memory.usedJSHeapSize = "lots"
    sample = collector.collect()
    assert nan_keys(sample, "web-js-heap")
    assert (
        collector.unsupported["web-js-heap"] == "performance.memory.usedJSHeapSize is not a number (got str)"
    )
    browser.js.performance.memory = JsNull()
    assert nan_keys(collector.collect(), "web-js-heap")
    assert collector.unsupported["web-js-heap"] == "performance.memory is not available here"
    browser.js.performance.memory = types.SimpleNamespace(
        usedJSHeapSize=1e6, totalJSHeapSize=2e6, jsHeapSizeLimit=3e6
    )
    assert collector.collect()["JS Heap Used"] == 1.0 and collector.unsupported == {}  # it recovers


def test_wasm_heap_from_wasm_memory_then_heap8(browser) -> None:
    module = browser.pyodide_js._module
    assert WebCollector(["web-wasm-heap"]).collect() == {"Wasm Heap": 33.554432}
    del module.wasmMemory
    module.HEAP8.length = 50_331_648  # grown
    assert WebCollector(["web-wasm-heap"]).collect() == {"Wasm Heap": 50.331648}
    del module.HEAP8
    collector = WebCollector(["web-wasm-heap"])
    assert math.isnan(collector.collect()["Wasm Heap"])
    assert collector.unsupported["web-wasm-heap"] == (
        "the wasm heap size is not readable: pyodide._module.wasmMemory is not available here; "
        "pyodide._module.HEAP8 is not available here"
    )


def test_wasm_heap_without_pyodide_js(browser, monkeypatch) -> None:
    monkeypatch.setitem(sys.modules, "pyodide_js", None)  # import fails
    ok, reason = source_available("web-wasm-heap")
    assert not ok and "pyodide_js module is not importable" in reason
    assert source_available("web-timing") == (True, "")


def test_cpu_cores_and_missing_navigator(browser) -> None:
    assert WebCollector(["web-cpu-cores"]).collect() == {"CPU Cores": 8.0}
    browser.js.navigator.hardwareConcurrency = 0
    assert source_available("web-cpu-cores") == (
        False,
        "navigator.hardwareConcurrency is 0, expected a positive count",
    )
    del browser.js.navigator  # Node 20
    collector = WebCollector(["web-cpu-cores"])
    assert math.isnan(collector.collect()["CPU Cores"])
    assert collector.unsupported == {"web-cpu-cores": "navigator is not available here"}


def test_a_throwing_getter_fails_soft(browser) -> None:
    class Throwing:
        @property
        def memory(self):
            raise RuntimeError("SecurityError")

        def now(self) -> float:
            return 5.0

    browser.js.performance = Throwing()
    collector = WebCollector(["web-js-heap", "web-timing"])
    sample = collector.collect()
    assert nan_keys(sample, "web-js-heap") and sample["Page Time"] == 0.005
    assert collector.unsupported == {"web-js-heap": "performance.memory is not available here"}


# ---------------------------------------------------------------- WebGPU
def test_gpu_pending_then_resolved(browser) -> None:
    gpu = browser.js.navigator.gpu
    collector = WebCollector(["web-gpu"])
    assert len(gpu.requests) == 1
    assert nan_keys(collector.collect(), "web-gpu")  # pending: NaN, never a wait
    gpu.requests[0].resolve(adapter())
    assert collector.collect() == {
        "WebGPU Adapter": 1.0,
        "WebGPU Fallback": 0.0,
        "WebGPU Features": 4.0,
        "WebGPU Max Buffer": 4294.967296,
        "WebGPU Max Storage Binding": 2147.483648,
        "WebGPU Max Workgroup Invocations": 1024.0,
    }
    assert collector.info == {
        "vendor": "nvidia",
        "architecture": "hopper",
        "device": "",
        "description": "H200",
    }


def test_gpu_null_adapter_legacy_fields_and_missing_limits(browser) -> None:
    gpu = browser.js.navigator.gpu
    none = WebCollector(["web-gpu"])
    gpu.requests[-1].resolve(JsNull())
    sample = none.collect()
    assert sample["WebGPU Adapter"] == 0.0 and all(math.isnan(sample[k]) for k in GPU_KEYS[1:])
    legacy = WebCollector(["web-gpu"])  # older Chrome: no adapter.info, isFallbackAdapter on the adapter
    gpu.requests[-1].resolve(types.SimpleNamespace(isFallbackAdapter=True))
    sample = legacy.collect()
    assert sample["WebGPU Adapter"] == 1.0 and sample["WebGPU Fallback"] == 1.0
    assert math.isnan(sample["WebGPU Max Buffer"]) and math.isnan(sample["WebGPU Features"])
    assert legacy.info == {}


def test_gpu_rejected_or_unreadable_fails_soft(browser) -> None:
    gpu = browser.js.navigator.gpu
    rejected = WebCollector(["web-gpu", "web-cpu-cores"])
    gpu.requests[-1].reject("NotAllowedError: blocked")
    sample = rejected.collect()
    assert nan_keys(sample, "web-gpu") and sample["CPU Cores"] == 8.0
    assert rejected.unsupported == {
        "web-gpu": "navigator.gpu.requestAdapter() was rejected: NotAllowedError: blocked"
    }
    broken = WebCollector(["web-gpu"])
    gpu.requests[-1].resolve(
        adapter(limits=types.SimpleNamespace(maxBufferSize="big"))
    )  # the callback must not raise
    assert nan_keys(broken.collect(), "web-gpu")
    assert "adapter.limits.maxBufferSize is not a number" in broken.unsupported["web-gpu"]


def test_gpu_request_that_throws(browser) -> None:
    def refuse():
        raise RuntimeError("WebGPU is disabled")

    browser.js.navigator.gpu.requestAdapter = refuse
    collector = WebCollector(["web-gpu"])
    assert nan_keys(collector.collect(), "web-gpu")
    assert collector.unsupported == {
        "web-gpu": "navigator.gpu.requestAdapter() failed: RuntimeError: WebGPU is disabled"
    }
    browser.js.navigator.gpu = types.SimpleNamespace()
    assert source_available("web-gpu") == (False, "navigator.gpu.requestAdapter is not available here")


# ---------------------------------------------------------------- the combined collector
def test_all_sources_skips_what_this_browser_lacks(browser) -> None:
    del browser.js.performance.memory  # Firefox
    del browser.js.navigator.gpu
    collector = WebCollector()
    assert collector.name == "web"
    assert set(collector.unsupported) == {"web-js-heap", "web-gpu"}
    assert collector.keys == ["Page Time", "Step Time", "Wasm Heap", "CPU Cores"]
    assert collector.units == {"Page Time": "s", "Step Time": "ms", "Wasm Heap": "MB", "CPU Cores": ""}
    sample = collector.collect()
    assert list(sample) == collector.keys and sample["CPU Cores"] == 8.0
    collector.close()
    assert all(math.isnan(v) for v in collector.collect().values())
    assert collector.unsupported["web-timing"] == "the collector is closed"


def test_bad_source_names() -> None:
    with pytest.raises(TypeError, match="list of source names"):
        WebCollector("web-timing")
    with pytest.raises(ValueError, match=r"unknown source\(s\) \['web-cpu'\]"):
        WebCollector(["web-cpu"])
    with pytest.raises(ValueError, match="at least one"):
        WebCollector([])
