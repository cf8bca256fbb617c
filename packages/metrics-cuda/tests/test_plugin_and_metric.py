"""The metrics-cuda plugin registration and CudaMetric (burn_train's numeric metric adapter)."""

from __future__ import annotations

import math
import sys

import burn_metrics_cuda as bmc
import pytest
from burn.plugins import registry


def test_registered_through_the_plugin_hook(monkeypatch, nvml):
    monkeypatch.setitem(sys.modules, "pynvml", None)
    spec = registry().collectors["cuda"]
    assert spec.group == "metrics-cuda"
    ok, reason = spec.is_available()
    assert not ok and "nvidia-ml-py" in reason
    monkeypatch.setitem(sys.modules, "pynvml", nvml.make())
    assert spec.is_available() == (True, "")
    c = spec.factory()
    try:
        assert c.name == "cuda" and c.collect()["GPU 0 Power"] == 120.0
    finally:
        c.close()


def test_cuda_metric_reads_the_collector(monkeypatch, nvml):
    pytest.importorskip("burn_train")
    monkeypatch.setitem(sys.modules, "pynvml", nvml.make([nvml.FakeGpu(), nvml.FakeGpu(used=8_000_000_000)]))
    mem = bmc.CudaMetric(gpu=1, metric="memory", interval=0.0)
    power = bmc.CudaMetric(gpu=0, metric="power")
    missing = bmc.CudaMetric(gpu=5, metric="usage")
    try:
        entry = mem.update(None, None)
        assert entry.name == "GPU 1 Memory Used" and entry.value == 8.0
        assert entry.formatted.startswith("8.00 / 141.00 GB")
        assert power.update(None, None).value == 120.0 and power.unit == "W"
        assert math.isnan(missing.update(None, None).value)
        assert missing.format_value(math.nan) == "n/a"
    finally:
        for m in (mem, power, missing):
            m.close()


def test_cuda_metric_rejects_unknown_metric():
    pytest.importorskip("burn_train")
    with pytest.raises(ValueError, match="metric must be one of"):
        bmc.CudaMetric(metric="fan speed")
    with pytest.raises(ValueError, match="gpu"):
        bmc.CudaMetric(gpu=-1)


def test_import_is_light():
    import subprocess

    code = "import sys, burn_metrics_cuda; print('pynvml' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
