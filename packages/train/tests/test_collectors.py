"""metrics-basic collectors register through the plugin hook; other collectors plug in the same way."""

from __future__ import annotations

import math
import time

import burn
import pytest
from burn.plugins import MetricCollectorSpec, hookimpl, register_plugin, registry, unregister_plugin
from burn_train import _collectors
from burn_train._events import MetricMetadata, Progress
from burn_train.metric import CollectorMetric, CpuMemory, CpuUse, available_collectors

from ._models import TinyMlp, adev, loaders

META = MetricMetadata(Progress(0, 1), 1, 1, 1)


def test_metrics_basic_collectors_are_registered_by_the_entry_point():
    specs = registry().collectors
    for name in ("cpu-use", "cpu-memory"):
        assert specs[name].group == "metrics-basic"
        assert specs[name].is_available() == (True, "")
    assert ("cpu-use", True, "") in available_collectors()


def test_missing_psutil_is_a_reason_not_a_crash(monkeypatch):
    monkeypatch.setattr(_collectors, "find_spec", lambda name: None)
    assert registry().collectors["cpu-use"].is_available() == (
        False,
        "psutil is not installed (pip install 'burn-core[metrics-basic]')",
    )
    ok, reason = CpuUse().check_available()
    assert not ok and "psutil is not installed" in reason


def test_cpu_use_and_memory_values_are_plausible():
    import psutil

    use, mem = CpuUse(interval=0.0), CpuMemory(interval=0.0)
    use.prepare()
    deadline = time.monotonic() + 0.3
    while time.monotonic() < deadline:  # keep a core busy so the window has ticks
        pass
    value = use.update(None, META).value
    assert 0.0 <= value <= 100.0
    used = mem.update(None, META).value
    vm = psutil.virtual_memory()
    assert used == pytest.approx((vm.total - vm.available) / 2**30, rel=0.2)
    assert mem.format_value(used).endswith(f"/ {vm.total / 2**30:.2f} GiB")
    assert mem.format(used, used).endswith(" GiB)")  # the epoch value carries the unit too


class FakeGpu:
    """A third-party collector, the way metrics-cuda / metrics-web provide theirs."""

    name = "fake-gpu"

    def __init__(self):
        self.calls = 0

    def collect(self):
        self.calls += 1
        return {"Fake GPU Usage": 42.0}


class FakePlugin:
    @hookimpl
    def burn_register_metric_collectors(self, register):
        register(MetricCollectorSpec("fake-gpu", FakeGpu, group="metrics-fake"))
        register(
            MetricCollectorSpec("never", FakeGpu, lambda: (False, "no such device"), group="metrics-fake")
        )


def test_learner_samples_every_available_plugin_collector(tmp_path):
    plugin = FakePlugin()
    register_plugin(plugin)
    try:
        from burn_train import LearnerBuilder
        from burn_train.metric import LossMetric

        burn.seed(0)
        dev = adev()
        train, valid = loaders(dev, n_train=64, n_valid=32)
        learner = (
            LearnerBuilder(tmp_path)
            .metric_train_numeric(LossMetric())
            .renderer("none")
            .system_metrics(True, interval=0.0)
            .metric_logs(plots=False)
            .num_epochs(1)
            .build(TinyMlp(dev), burn.optim.SgdConfig().init(), 0.01)
        )
        learner.fit(train, valid)
    finally:
        unregister_plugin(plugin)
    train_values = learner.store.values["train"]
    assert train_values["Fake GPU Usage"] == {1: 42.0}
    assert "never" not in str(train_values)  # unavailable collectors are skipped (and logged)
    assert 0.0 <= train_values["CPU Usage"][1] <= 100.0 or math.isnan(train_values["CPU Usage"][1])
    assert "metric collector never unavailable: no such device" in (tmp_path / "experiment.log").read_text()


def test_unknown_collector_name_is_explained():
    ok, reason = CollectorMetric("nope").check_available()
    assert not ok and "nope" in reason


class ProbedPlugin:
    """A collector whose probe is expensive (NVML's starts and stops the driver's library): counted."""

    probes = 0

    @staticmethod
    def probe():
        ProbedPlugin.probes += 1
        return True, ""

    @hookimpl
    def burn_register_metric_collectors(self, register):
        register(MetricCollectorSpec("probed", FakeGpu, ProbedPlugin.probe, group="metrics-fake"))


def test_a_collector_is_probed_once_per_fit_not_again_when_it_starts(tmp_path):
    from burn_train import LearnerBuilder
    from burn_train.metric import LossMetric

    plugin = ProbedPlugin()
    register_plugin(plugin)
    try:
        burn.seed(0)
        dev = adev()
        train, valid = loaders(dev, n_train=32, n_valid=32)
        learner = (
            LearnerBuilder(tmp_path)
            .metric_train_numeric(LossMetric())
            .renderer("none")
            .system_metrics(True, interval=0.0)
            .metric_logs(plots=False)
            .num_epochs(1)
            .build(TinyMlp(dev), burn.optim.SgdConfig().init(), 0.01)
        )
        ProbedPlugin.probes = 0
        learner.fit(train, valid)
    finally:
        unregister_plugin(plugin)
    assert ProbedPlugin.probes == 1  # available_collectors() before fit; the metrics' start trusts it
    assert learner.store.values["train"]["Fake GPU Usage"] == {1: 42.0}
    metric = CollectorMetric("nope")
    with pytest.raises(KeyError, match="no metric collector 'nope'"):
        metric.prepare()  # never probed: built with the checks, as before
