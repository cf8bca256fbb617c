"""CudaCollector against a fake pynvml (no GPU needed): every metric, fail-soft queries, missing
library or driver, several GPUs, the energy fallback, and the background sampler."""

from __future__ import annotations

import sys
import threading
import time

import burn_metrics_cuda as bmc
import pytest
from burn_metrics_cuda import _nvml


@pytest.fixture
def fake(monkeypatch, nvml):
    def install(gpus=None, init_error=None):
        mod = nvml.make(gpus, init_error)
        monkeypatch.setitem(sys.modules, "pynvml", mod)
        return mod

    return install


def test_all_metrics_of_one_gpu(fake):
    mod = fake()
    with bmc.CudaCollector(interval=None) as c:
        first = c.collect()
        second = c.collect()
    assert first == {
        "GPU 0 Utilization": 37.0,
        "GPU 0 Memory Utilization": 12.0,
        "GPU 0 Memory Used": 4.0,
        "GPU 0 Memory Total": 141.0,
        "GPU 0 Temperature": 45.0,
        "GPU 0 Power": 120.0,
        "GPU 0 Energy": 5.0,  # (1_005_000 - 1_000_000) mJ since start
    }
    assert second["GPU 0 Energy"] == pytest.approx(12.0)
    assert c.names == ["NVIDIA H200"]
    assert c.unsupported == {}
    assert mod.calls == {"init": 1, "shutdown": 0}  # NVML stays started for the process
    _nvml.close_session()
    assert mod.calls == {"init": 1, "shutdown": 1}


def test_one_metric_not_supported_keeps_the_others(fake, nvml):
    fake([nvml.FakeGpu(unsupported={"temperature"})])
    with bmc.CudaCollector(interval=None) as c:
        values = c.collect()
    assert "GPU 0 Temperature" not in values
    assert values["GPU 0 Utilization"] == 37.0 and values["GPU 0 Power"] == 120.0
    assert values["GPU 0 Memory Used"] == 4.0
    assert c.unsupported["GPU 0 temperature"].startswith("not supported")


def test_energy_falls_back_to_integrating_power(fake, nvml):
    gpu = nvml.FakeGpu(unsupported={"energy"}, power_mw=100_000)
    fake([gpu])
    now = [10.0]
    with bmc.CudaCollector(interval=None, clock=lambda: now[0]) as c:
        assert c.collect()["GPU 0 Energy"] == 0.0  # first power sample: nothing integrated yet
        now[0] = 12.0
        gpu.power_mw = 200_000
        assert c.collect()["GPU 0 Energy"] == pytest.approx(0.5 * (100 + 200) * 2.0)  # trapezoid, J
        assert "integrating power" in c.unsupported["GPU 0 Energy"]


def test_several_gpus_report_separately(fake, nvml):
    fake(
        [
            nvml.FakeGpu(util=10, temp=40, energy_mj=[0, 2000]),
            nvml.FakeGpu(util=90, temp=70, energy_mj=[500, 4500]),
        ]
    )
    with bmc.CudaCollector(interval=None) as c:
        values = c.collect()
    assert c.device_count == 2
    assert (values["GPU 0 Utilization"], values["GPU 1 Utilization"]) == (10.0, 90.0)
    assert (values["GPU 0 Temperature"], values["GPU 1 Temperature"]) == (40.0, 70.0)
    assert (values["GPU 0 Energy"], values["GPU 1 Energy"]) == (2.0, 4.0)


def test_driver_missing_is_unavailable_with_reason(fake, nvml):
    fake(init_error=nvml.NVMLError_DriverNotLoaded())
    ok, reason = bmc.is_available()
    assert not ok and "NVML could not start" in reason and "Driver Not Loaded" in reason
    with pytest.raises(bmc.CollectorUnavailable, match=r"^unavailable: NVML could not start"):
        bmc.CudaCollector()


def test_no_gpu_is_unavailable(fake):
    fake(gpus=[])
    assert bmc.is_available() == (False, "NVML sees no NVIDIA GPU")


def test_library_missing_is_unavailable_with_reason(monkeypatch):
    monkeypatch.setitem(sys.modules, "pynvml", None)  # import pynvml raises ImportError
    ok, reason = bmc.is_available()
    assert not ok and reason == _nvml.LIBRARY_MISSING
    with pytest.raises(bmc.CollectorUnavailable, match="nvidia-ml-py is not installed"):
        bmc.CudaCollector()


def test_nvml_starts_once_per_process_and_stops_at_close_session(fake):
    mod = fake()
    assert bmc.is_available() == (True, "")
    with bmc.CudaCollector(interval=None) as c:
        assert c.collect()["GPU 0 Utilization"] == 37.0
    with bmc.CudaCollector(interval=None) as c:  # a second run: no second start, no stop between
        assert c.collect()["GPU 0 Utilization"] == 37.0
    assert mod.calls == {"init": 1, "shutdown": 0}
    assert _nvml._SESSION.users == 0
    _nvml.close_session()
    assert mod.calls == {"init": 1, "shutdown": 1}
    _nvml.close_session()  # idempotent
    assert mod.calls["shutdown"] == 1
    with bmc.CudaCollector(interval=None):  # started again after a close
        assert mod.calls["init"] == 2


def test_failed_start_leaves_no_session(fake, nvml):
    fake(init_error=nvml.NVMLError_DriverNotLoaded())
    with pytest.raises(bmc.CollectorUnavailable):
        bmc.CudaCollector()
    assert _nvml._SESSION.nvml is None and _nvml._SESSION.users == 0
    mod = fake()  # the driver is back (a new module here): the next use starts NVML
    assert bmc.is_available() == (True, "")
    assert mod.calls["init"] == 1


def test_sampler_thread_feeds_collect(fake, nvml):
    fake([nvml.FakeGpu(energy_mj=[0])])
    c = bmc.CudaCollector(interval=0.01)
    try:
        assert c._sampler.running
        deadline = time.monotonic() + 5
        while c._sampler.samples < 3 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert c._sampler.samples >= 3
        assert c.collect()["GPU 0 Utilization"] == 37.0
    finally:
        c.close()
    assert not c._sampler.running
    assert c.sample() == {}  # closed: no NVML calls any more


def test_sampler_samples_off_the_calling_thread():
    seen = []

    def fn():
        seen.append(threading.current_thread().name)
        return {"x": float(len(seen))}

    s = bmc.Sampler(fn, interval=0.01).start()
    try:
        deadline = time.monotonic() + 5
        while len(seen) < 3 and time.monotonic() < deadline:
            time.sleep(0.01)
    finally:
        s.stop()
    assert seen[0] == threading.current_thread().name  # the first sample is taken by start()
    assert "burn-metrics-cuda-sampler" in seen[1:]
    assert s.latest()["x"] >= 3.0


def test_sampler_keeps_last_good_sample_on_error():
    calls = iter([{"a": 1.0}])

    def fn():
        return next(calls)  # StopIteration after the first call

    s = bmc.Sampler(fn, interval=10).start()
    s._take()
    s.stop()
    assert s.latest() == {"a": 1.0} and "StopIteration" in s.last_error


def test_sampler_rejects_bad_interval():
    with pytest.raises(ValueError, match="interval"):
        bmc.Sampler(dict, interval=0)
