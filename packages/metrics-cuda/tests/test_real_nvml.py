"""The collector on a real NVIDIA GPU through the installed nvidia-ml-py (skips where NVML cannot run)."""

from __future__ import annotations

import time

import burn_metrics_cuda as bmc
import pytest

pytestmark = pytest.mark.gpu


@pytest.fixture
def collector():
    ok, reason = bmc.is_available()
    if not ok:
        pytest.skip(f"NVML unavailable: {reason}")
    c = bmc.CudaCollector(interval=0.05)
    yield c
    c.close()


def test_real_gpu_reports_plausible_values(collector):
    first = collector.collect()
    time.sleep(0.3)  # let the sampler thread take a few samples and the energy counter move
    values = collector.collect()
    assert collector._sampler.samples >= 2
    assert 0.0 <= values["GPU 0 Utilization"] <= 100.0
    assert 0.0 < values["GPU 0 Memory Used"] <= values["GPU 0 Memory Total"] < 1000.0
    if "GPU 0 Temperature" in values:
        assert 0.0 < values["GPU 0 Temperature"] < 120.0
    if "GPU 0 Power" in values:
        assert 1.0 < values["GPU 0 Power"] < 2000.0
    assert values["GPU 0 Energy"] >= first.get("GPU 0 Energy", 0.0) >= 0.0
    missing = {f"GPU 0 {m}" for m in bmc.METRICS} - set(values)
    print("unsupported here:", collector.unsupported, "missing:", missing)
    assert all(f"GPU {i} Memory Total" in values for i in range(collector.device_count))
