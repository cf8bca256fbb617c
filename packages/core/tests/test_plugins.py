"""Unit tests of burn.plugins: loading, broken-plugin reporting, env switches, reload, code registration.

Plugins here are real distributions: a ``<name>.dist-info`` folder (METADATA + entry_points.txt) and a
module, written to a temporary folder put on ``sys.path``, found by ``importlib.metadata`` exactly as an
installed package would be.
"""

from __future__ import annotations

import contextlib
import importlib
import sys
import textwrap
import threading
import tomllib
import warnings
from pathlib import Path

import burn
import pluggy
import pytest
from burn import plugins
from burn.plugins import (
    BackendSpec,
    CollectiveSpec,
    MetricCollectorSpec,
    PluginError,
    PluginWarning,
    _discovery,
    _manager,
    hookimpl,
)

CORE = Path(__file__).resolve().parents[1]

GOOD = """
from burn.plugins import BackendSpec, MetricCollectorSpec, hookimpl

@hookimpl
def burn_register_backends(register):
    register(BackendSpec(name="{backend}", factory=lambda index: None, aliases=("{backend}-alias",)))

@hookimpl
def burn_register_metric_collectors(register):
    register(MetricCollectorSpec(name="{backend}-collector", factory=object, group="metrics-test"))

@hookimpl
def burn_register_renderers(register):
    register("{backend}-renderer", object)
"""

BACKEND_THEN_RAISE = """
from burn.plugins import BackendSpec, hookimpl

@hookimpl
def burn_register_backends(register):
    register(BackendSpec(name="{backend}", factory=lambda index: None))
    raise RuntimeError("hook failed after registering")
"""


class Plugins:
    """Writes fake installed distributions with ``burn`` entry points under one temporary folder."""

    def __init__(self, root: Path, prefix: str) -> None:
        self.root, self.prefix, self.modules = root, prefix, []

    def dist(self, dist: str, entry_points: dict[str, str], version: str = "1.0") -> dict[str, str]:
        """Install ``dist`` whose entry points map names to module sources; returns name -> module."""
        info = self.root / f"{dist.replace('-', '_')}-{version}.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: {version}\n")
        lines, modules = ["[burn]"], {}
        for name, source in entry_points.items():
            module = f"{self.prefix}_{name.replace('-', '_')}"
            (self.root / f"{module}.py").write_text(textwrap.dedent(source))
            lines.append(f"{name} = {module}")
            modules[name] = module
            self.modules.append(module)
        (info / "entry_points.txt").write_text("\n".join(lines) + "\n")
        importlib.invalidate_caches()
        plugins.reload()
        return modules


@pytest.fixture
def fake(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest):
    monkeypatch.delenv("BURN_DISABLE_PLUGINS", raising=False)
    monkeypatch.delenv("BURN_DISABLE_PLUGIN_AUTOLOAD", raising=False)
    monkeypatch.syspath_prepend(str(tmp_path))
    helper = Plugins(tmp_path, f"burnfake_{request.node.name.removeprefix('test_')[:40]}")
    yield helper
    for module in helper.modules:
        sys.modules.pop(module, None)
    _manager._extra.clear()
    plugins.reload()


@contextlib.contextmanager
def _no_plugin_warnings():
    """Ignore PluginWarnings (the workspace's real plugins may be mid-edit); tests check ``broken``."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PluginWarning)
        yield


def _quiet_registry() -> plugins.Registry:
    with _no_plugin_warnings():
        return plugins.registry()


def _broken(reg: plugins.Registry, name: str):
    return next((b for b in reg.broken if b.name == name), None)


# ---------------------------------------------------------------- loading


def test_numpy_backend_is_registered_by_burn_core():
    reg = _quiet_registry()
    assert reg.backend("cpu") is reg.backends["ndarray"]
    info = reg.provider("backend", "ndarray")
    assert (info.name, info.value, info.dist) == ("ndarray", "burn._ndarray._plugin", "burn-core")


def test_entry_point_plugin_registers_backend_collector_renderer(fake):
    fake.dist("fake-good", {"good": GOOD.format(backend="goodb")}, version="1.2.3")
    reg = _quiet_registry()
    info = next(p for p in reg.plugins if p.name == "good")
    assert (info.dist, info.version) == ("fake-good", "1.2.3")
    assert info.provides == ["backend:goodb", "collector:goodb-collector", "renderer:goodb-renderer"]
    assert reg.backend("goodb-alias").name == "goodb"
    assert reg.collector("goodb-collector").group == "metrics-test"
    assert reg.renderers["goodb-renderer"] is object
    assert burn.device("goodb:2").index == 2


def test_import_error_is_reported_and_others_still_load(fake):
    fake.dist(
        "fake-mixed", {"bad": "raise ImportError('no such driver')", "good": GOOD.format(backend="okb")}
    )
    with pytest.warns(PluginWarning, match=r"'bad'.*failed to import: ImportError: no such driver"):
        reg = plugins.registry()
    bad = _broken(reg, "bad")
    assert (bad.stage, bad.dist, bad.version) == ("import", "fake-mixed", "1.0")
    assert bad.error == "ImportError: no such driver"
    assert "Traceback" in bad.traceback
    assert "okb" in reg.backends and "ndarray" in reg.backends


def test_failing_hook_leaves_nothing_registered(fake):
    fake.dist("fake-half", {"half": BACKEND_THEN_RAISE.format(backend="halfb")})
    with pytest.warns(PluginWarning, match="failed to register"):
        reg = plugins.registry()
    assert _broken(reg, "half").stage == "register"
    assert _broken(reg, "half").error == "RuntimeError: hook failed after registering"
    assert "halfb" not in reg.backends
    assert all(p.name != "half" for p in reg.plugins)
    assert not plugins.get_plugin_manager().has_plugin("half")


def test_unknown_hook_name_fails_check_pending_unless_optional(fake):
    typo = "from burn.plugins import hookimpl\n@hookimpl\ndef burn_register_backendz(register): pass\n"
    newer = "from burn.plugins import hookimpl\n@hookimpl(optionalhook=True)\ndef burn_future_hook(x): pass\n"
    fake.dist("fake-hooks", {"typo": typo, "newer": newer})
    with pytest.warns(PluginWarning, match="typo"):
        reg = plugins.registry()
    assert "PluginValidationError" in _broken(reg, "typo").error
    assert "burn_register_backendz" in _broken(reg, "typo").error
    assert any(p.name == "newer" for p in reg.plugins)


def test_wrong_hook_arguments_and_wrong_spec_type_are_reported(fake):
    args = "from burn.plugins import hookimpl\n@hookimpl\ndef burn_register_backends(reg): pass\n"
    spec = (
        "from burn.plugins import hookimpl\n@hookimpl\ndef burn_register_backends(register): register('x')\n"
    )
    fake.dist("fake-wrong", {"args": args, "spec": spec})
    with pytest.warns(PluginWarning):
        reg = plugins.registry()
    assert "PluginValidationError" in _broken(reg, "args").error
    assert (
        _broken(reg, "spec").error
        == "TypeError: burn_register_backends: register() expects a BackendSpec, got 'x'"
    )


def test_name_conflicts_break_the_later_plugin(fake):
    fake.dist("fake-a", {"first": GOOD.format(backend="dupb")})
    fake.dist("fake-b", {"second": GOOD.format(backend="dupb"), "cpu-thief": GOOD.format(backend="cpu")})
    with pytest.warns(PluginWarning):
        reg = plugins.registry()
    assert reg.provider("backend", "dupb").name == "first"
    assert "already used by backend 'dupb' of plugin 'first' (fake-a)" in _broken(reg, "second").error
    assert (
        "already used by backend 'ndarray' of plugin 'ndarray' (burn-core)" in _broken(reg, "cpu-thief").error
    )


def test_registry_use_while_loading_is_reported_not_recursive(fake):
    src = "import burn\nburn.device('cpu')\n"
    fake.dist("fake-eager", {"eager": src})
    with pytest.warns(PluginWarning, match="while plugins were loading"):
        reg = plugins.registry()
    assert "PluginError" in _broken(reg, "eager").error


def test_concurrent_first_use_loads_once(fake):
    counter = "from burn.plugins import hookimpl\nCALLS = []\n@hookimpl\ndef burn_register_backends(register):\n    CALLS.append(1)\n"
    modules = fake.dist("fake-count", {"count": counter})
    results = []
    with _no_plugin_warnings():
        threads = [threading.Thread(target=lambda: results.append(plugins.registry())) for _ in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert len({id(r) for r in results}) == 1
    assert sys.modules[modules["count"]].CALLS == [1]


# ---------------------------------------------------------------- env switches


def test_disable_by_entry_point_name_and_by_dist_name(fake, monkeypatch):
    fake.dist("Fake_Dis", {"one": GOOD.format(backend="oneb"), "two": GOOD.format(backend="twob")})
    monkeypatch.setenv("BURN_DISABLE_PLUGINS", " one ,unrelated")
    plugins.reload()
    reg = _quiet_registry()
    assert "one" in reg.disabled and "oneb" not in reg.backends and "twob" in reg.backends
    monkeypatch.setenv("BURN_DISABLE_PLUGINS", "fake-dis")  # normalised: Fake_Dis == fake-dis
    plugins.reload()
    reg = _quiet_registry()
    assert {"one", "two"} <= set(reg.disabled) and not {"oneb", "twob"} & set(reg.backends)


def test_disabling_the_builtin_removes_the_numpy_backend(fake, monkeypatch):
    monkeypatch.setenv("BURN_DISABLE_PLUGINS", "ndarray")
    plugins.reload()
    reg = _quiet_registry()
    assert "ndarray" not in reg.backends and "ndarray" in reg.disabled
    with pytest.raises(burn.DeviceError, match="unknown backend 'cpu'"):
        burn.device("cpu")


def test_autoload_off_keeps_builtins_and_code_plugins(fake, monkeypatch):
    fake.dist("fake-auto", {"auto-ep": GOOD.format(backend="autob")})
    monkeypatch.setenv("BURN_DISABLE_PLUGIN_AUTOLOAD", "1")
    plugins.reload()
    reg = plugins.registry()  # no entry point is imported, so no warning can come from one
    assert reg.autoload is False
    assert [p.name for p in reg.plugins] == ["ndarray", "autotune", "fusion"]  # burn-core's own plugins
    assert fake.modules[0] not in sys.modules
    plugins.register_plugin(_CodePlugin("codeb"))
    assert set(plugins.registry().backends) == {"ndarray", "codeb"}


def test_builtins_load_without_installed_metadata(fake, monkeypatch):
    monkeypatch.setattr(_discovery, "_entry_points", lambda: iter(()))  # a source tree on PYTHONPATH
    plugins.reload()
    info = plugins.registry().provider("backend", "ndarray")
    assert (info.dist, info.version) == ("burn-core", burn.__version__)


def test_builtins_table_matches_burn_cores_entry_points():
    meta = tomllib.loads((CORE / "pyproject.toml").read_text())
    assert meta["project"]["entry-points"]["burn"] == plugins.BUILTINS


# ---------------------------------------------------------------- reload, check_pending, code registration


class _CodePlugin:
    def __init__(self, backend: str, fail: bool = False) -> None:
        self.backend, self.fail = backend, fail

    @hookimpl
    def burn_register_backends(self, register):
        if self.fail:
            raise ValueError("code plugin failed")
        register(BackendSpec(name=self.backend, factory=lambda index: None))


def test_reload_rereads_entry_points_and_keeps_built_backends(fake):
    reg = _quiet_registry()
    backend = burn.device("cpu").backend
    fake.dist("fake-late", {"late": GOOD.format(backend="lateb")})  # installed after first use
    assert "lateb" not in reg.backends
    plugins.reload()
    new = _quiet_registry()
    assert new is not reg and "lateb" in new.backends
    # a device keeps its backend instance, so tensors made before the reload still mix with new ones
    assert burn.device("cpu").backend is backend


def test_check_pending_reports_hand_registered_typos(fake):
    _quiet_registry()
    pm = plugins.get_plugin_manager()

    class Typo:
        @hookimpl
        def burn_register_collectors(self, register):  # the real hook is burn_register_metric_collectors
            pass

    plugins.check_pending()  # everything loaded so far is valid
    pm.register(Typo(), name="typo-by-hand")
    with pytest.raises(pluggy.PluginValidationError, match="burn_register_collectors"):
        plugins.check_pending()


def test_register_plugin_from_code_survives_reload_until_unregistered(fake):
    plugin = _CodePlugin("codeb")
    with _no_plugin_warnings():
        info = plugins.register_plugin(plugin, name="code")
        assert (info.name, info.dist, info.provides) == ("code", "(registered in code)", ["backend:codeb"])
        plugins.reload()
        assert "codeb" in plugins.registry().backends
        assert burn.device("codeb").kind == "codeb"
        with pytest.raises(PluginError, match="already registered"):
            plugins.register_plugin(plugin)
        plugins.unregister_plugin("code")
        assert "codeb" not in plugins.registry().backends
    with pytest.raises(PluginError, match="was not registered"):
        plugins.unregister_plugin(plugin)


class _CollectivePlugin:
    def __init__(self, name: str, backends: tuple[str, ...] = ("ndarray",)) -> None:
        self.name, self.backends = name, backends

    @hookimpl
    def burn_register_collectives(self, register):
        register(CollectiveSpec(name=self.name, backends=self.backends, factory=lambda host, device: host))


def test_collectives_register_and_serve_their_backends_devices(fake):
    from burn.distributed import device_collectives

    with _no_plugin_warnings():
        info = plugins.register_plugin(_CollectivePlugin("ring"), name="ring-plugin")
        assert info.provides == ["collective:ring"]
        reg = plugins.registry()
        assert reg.collective("ring").backends == ("ndarray",)
        assert reg.provider("collective", "ring") is not None
        assert [s.name for s in device_collectives(burn.device("cpu", autodiff=False))] == ["ring"]
        with pytest.raises(KeyError, match="unknown collective 'gloo'; registered collectives: .*ring"):
            reg.collective("gloo")
        with pytest.raises(PluginError, match="collective 'ring' is already registered"):
            plugins.register_plugin(_CollectivePlugin("ring"), name="ring-again")
        plugins.unregister_plugin("ring-plugin")
        assert device_collectives(burn.device("cpu")) == []


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"name": "Ring"}, ValueError, "CollectiveSpec.name: expected a lowercase identifier"),
        ({"name": "mpi"}, ValueError, "reserved"),
        ({"backends": "cuda"}, TypeError, "CollectiveSpec.backends: expected a non-empty tuple"),
        ({"backends": ()}, TypeError, "CollectiveSpec.backends"),
        ({"factory": None}, TypeError, "CollectiveSpec.factory: expected a callable"),
        ({"is_installed": True}, TypeError, "CollectiveSpec.is_installed"),
    ],
)
def test_collective_spec_checks_its_fields(kwargs, error, match):
    with pytest.raises(error, match=match):
        CollectiveSpec(
            **{"name": "ring", "backends": ("cuda",), "factory": lambda host, device: host, **kwargs}
        )


def test_register_plugin_that_fails_raises_and_is_not_kept(fake):
    with _no_plugin_warnings():
        with pytest.raises(PluginError, match="code plugin failed"):
            plugins.register_plugin(_CodePlugin("failb", fail=True))
        assert _manager._extra == []
        assert not [b for b in plugins.registry().broken if b.dist == _manager.IN_CODE]
        with pytest.raises(PluginError, match="already used by backend 'ndarray'"):
            plugins.register_plugin(_CodePlugin("numpy"))


# ---------------------------------------------------------------- specs and probes


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"name": "My Backend"}, ValueError, "BackendSpec.name: expected a lowercase name"),
        ({"name": "auto"}, ValueError, "reserved"),
        ({"name": "ok", "aliases": "cpu2"}, TypeError, "BackendSpec.aliases: expected a tuple"),
        ({"name": "ok", "aliases": ("Bad:0",)}, ValueError, "BackendSpec.aliases"),
        ({"name": "ok", "factory": 3}, TypeError, "BackendSpec.factory: expected a callable, got int"),
        ({"name": "ok", "priority": 1.5}, TypeError, "BackendSpec.priority"),
    ],
)
def test_backend_spec_checks_its_fields(kwargs, error, match):
    with pytest.raises(error, match=match):
        BackendSpec(**{"factory": lambda index: None, **kwargs})


def test_collector_spec_checks_its_fields():
    with pytest.raises(ValueError, match="MetricCollectorSpec.name"):
        MetricCollectorSpec(name=" ", factory=object)
    with pytest.raises(TypeError, match="MetricCollectorSpec.is_available"):
        MetricCollectorSpec(name="c", factory=object, is_available=True)
    assert BackendSpec(name="ok", factory=int, aliases=["a"]).aliases == ("a",)


def _raise():
    raise OSError("driver missing")


@pytest.mark.parametrize(
    ("check", "expected"),
    [
        (lambda: (True, ""), (True, "")),
        (lambda: (False, "no GPU"), (False, "no GPU")),
        (lambda: True, (True, "")),
        (lambda: False, (False, "unavailable (the check gave no reason)")),
        (lambda: "yes", (False, "availability check returned 'yes'; expected (bool, reason)")),
        (_raise, (False, "availability check failed: OSError: driver missing")),
    ],
)
def test_probe_turns_every_outcome_into_ok_and_reason(check, expected):
    assert plugins.probe(check) == expected
    assert plugins.probe(check, timeout=5.0) == expected


def test_probe_times_out_on_a_hanging_check():
    release = threading.Event()
    try:
        assert plugins.probe(lambda: release.wait(30), timeout=0.05) == (
            False,
            "availability check timed out after 0.05 s",
        )
    finally:
        release.set()


def test_probe_devices():
    assert plugins.probe_devices(lambda: ("a:0", "a:1")) == (["a:0", "a:1"], "")
    assert plugins.probe_devices(_raise) == ([], "device enumeration failed: OSError: driver missing")
    assert plugins.probe_devices(lambda: "a:0")[1].startswith("device enumeration returned 'a:0'")


def test_device_selection_survives_a_raising_probe(fake):
    class Crashy:
        @hookimpl
        def burn_register_backends(self, register):
            register(BackendSpec(name="crashy", factory=int, is_available=_raise, priority=10**6))

    with _no_plugin_warnings():
        plugins.register_plugin(Crashy())
        info = {b.name: b for b in burn.backends()}["crashy"]
        assert (info.available, info.reason) == (False, "availability check failed: OSError: driver missing")
        assert burn.device("auto").kind != "crashy"
        with pytest.raises(burn.BackendUnavailableError, match="crashy.*availability check failed"):
            burn.device("crashy").backend  # noqa: B018


def test_two_entry_points_for_one_module_keep_the_first(fake):
    modules = fake.dist("fake-twice", {"first": GOOD.format(backend="onceb")})
    info = fake.root / "fake_twice-1.0.dist-info" / "entry_points.txt"
    info.write_text(info.read_text() + f"second = {modules['first']}\n")  # entry points load sorted by name
    importlib.invalidate_caches()
    plugins.reload()
    with pytest.warns(PluginWarning, match="second"):
        reg = plugins.registry()
    assert (
        _broken(reg, "second").error
        == f"ValueError: {modules['first']} is already registered as plugin 'first'"
    )
    assert reg.provider("backend", "onceb").name == "first"
    assert plugins.get_plugin_manager().has_plugin("first")
