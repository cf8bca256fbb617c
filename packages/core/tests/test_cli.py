"""Tests of ``burn info`` (burn._cli): JSON and text reports, and probes that misbehave."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from importlib.metadata import EntryPoint

import burn
import pytest
from burn import _cli, plugins
from burn.plugins import BackendSpec, MetricCollectorSpec, _discovery, _known, _manager, hookimpl


def _raise():
    raise OSError("no driver")


class _Odd:
    """A plugin whose probes raise, hang, return nonsense or fail to list devices."""

    def __init__(self) -> None:
        self.release = threading.Event()  # lets the hanging probe finish once the test is over

    @hookimpl
    def burn_register_backends(self, register):
        register(BackendSpec(name="raises", factory=int, is_available=_raise))
        register(BackendSpec(name="hangs", factory=int, is_available=lambda: self.release.wait(30)))
        register(BackendSpec(name="nonsense", factory=int, is_available=lambda: 42))
        register(BackendSpec(name="nodevices", factory=int, devices=_raise))
        register(BackendSpec(name="fine", factory=int, devices=lambda: ["fine:0", "fine:1"]))

    @hookimpl
    def burn_register_metric_collectors(self, register):
        register(MetricCollectorSpec(name="gpu-util", factory=object, group="metrics-test"))
        register(MetricCollectorSpec(name="no-gpu", factory=object, is_available=lambda: (False, "no NVML")))
        register(MetricCollectorSpec(name="crashy", factory=object, is_available=_raise))


@pytest.fixture
def clean(monkeypatch):
    monkeypatch.delenv("BURN_DISABLE_PLUGINS", raising=False)
    monkeypatch.delenv("BURN_DISABLE_PLUGIN_AUTOLOAD", raising=False)
    yield
    for _, plugin in _manager._extra:
        if isinstance(plugin, _Odd):
            plugin.release.set()
    _manager._extra.clear()
    plugins.reload()


@pytest.fixture
def odd(clean):
    plugins.register_plugin(_Odd(), name="odd")


def _info(capsys, *args: str) -> tuple[int, dict]:
    code = _cli.main(["info", "--json", *args])
    return code, json.loads(capsys.readouterr().out)


def test_json_report_lists_packages_plugins_and_the_numpy_backend(clean, capsys):
    code, info = _info(capsys)
    assert code == 0
    # burn-core, then every distribution with a `burn` entry point and the first-party ones not installed
    installed = {_discovery.normalize(d.name): d.name for d in _discovery.distributions()}
    assert installed["burn-core"] == info["packages"][0]["name"]
    expected = (set(installed.values()) | {k.dist for k in _known.KNOWN}) - {"burn-core"}
    assert sorted(p["name"] for p in info["packages"][1:]) == sorted(expected)
    assert {p["name"] for p in info["packages"] if p["installed"]} == set(installed.values())
    core = info["packages"][0]
    assert (core["installed"], core["version"]) == (True, burn.__version__)
    ndarray = next(b for b in info["backends"] if b["name"] == "ndarray")
    assert ndarray["available"] and ndarray["devices"] == ["cpu"]
    assert (ndarray["plugin"], ndarray["dist"]) == ("ndarray", "burn-core")
    by_name = {p["name"]: p for p in info["plugins"]}
    assert by_name["ndarray"]["value"] == "burn._ndarray._plugin"
    assert by_name["autotune"]["value"] == "burn.autotune._commands"
    assert info["autoload"] is True and info["load_error"] == ""


def test_misbehaving_probes_become_reasons(odd, capsys):
    code, info = _info(capsys, "--timeout", "0.2")
    assert code == 0
    rows = {b["name"]: b for b in info["backends"]}
    assert rows["raises"]["reason"] == "availability check failed: OSError: no driver"
    assert rows["hangs"]["reason"] == "availability check timed out after 0.2 s"
    assert rows["nonsense"]["reason"] == "availability check returned 42; expected (bool, reason)"
    assert rows["nodevices"]["reason"] == "device enumeration failed: OSError: no driver"
    assert not any(rows[n]["available"] for n in ("raises", "hangs", "nonsense", "nodevices"))
    assert rows["fine"]["available"] and rows["fine"]["devices"] == ["fine:0", "fine:1"]
    assert rows["fine"]["dist"] == "(registered in code)"
    collectors = {c["name"]: c for c in info["collectors"]}
    assert collectors["gpu-util"]["available"] and collectors["gpu-util"]["group"] == "metrics-test"
    assert collectors["no-gpu"]["reason"] == "no NVML"
    assert collectors["crashy"]["reason"] == "availability check failed: OSError: no driver"


def test_text_report(odd, capsys):
    assert _cli.main(["info", "--timeout", "0.2"]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"burn-py {burn.__version__} on ")
    sections = ["Packages:", "Plugins (", "Backends:", "Metric collectors:", "Broken plugins:"]
    assert [out.index(s) for s in sections] == sorted(out.index(s) for s in sections)
    # columns are aligned to the widest cell, so compare rows with whitespace collapsed
    rows = {" ".join(line.split()) for line in out.splitlines()}
    assert "fine available (registered in code) devices: fine:0, fine:1" in rows
    assert "raises unavailable (registered in code) availability check failed: OSError: no driver" in rows
    assert "no-gpu unavailable - (registered in code) no NVML" in rows
    assert "gpu-util available metrics-test (registered in code)" in rows
    assert not any(line != line.rstrip() for line in out.splitlines())


def test_broken_plugins_traceback_and_strict(clean, monkeypatch, capsys):
    missing = EntryPoint(name="missing", value="burnfake_cli_no_such_module", group="burn")
    monkeypatch.setattr(_discovery, "_entry_points", lambda: iter([missing]))
    plugins.reload()
    code, info = _info(capsys)
    assert code == 0
    assert info["broken"][0]["error"] == "ModuleNotFoundError: No module named 'burnfake_cli_no_such_module'"
    assert [p["name"] for p in info["plugins"]] == [
        "ndarray",
        "autotune",
        "fusion",
    ]  # built-in fallback still loads
    assert _cli.main(["info", "--strict", "-v"]) == 1
    out = capsys.readouterr().out
    assert "missing  burnfake_cli_no_such_module" in out
    assert "Traceback of plugin 'missing':" in out and "ModuleNotFoundError" in out


def test_a_failing_registry_is_reported_not_raised(clean, monkeypatch, capsys):
    def boom():
        raise RuntimeError("corrupt dist-info")

    monkeypatch.setattr(plugins, "registry", boom)
    code, info = _info(capsys)
    assert code == 0 and info["backends"] == []
    assert info["load_error"] == "loading plugins failed: RuntimeError: corrupt dist-info"
    assert _cli.main(["info", "--strict"]) == 1
    assert "ERROR: loading plugins failed" in capsys.readouterr().out


def test_a_third_party_distribution_is_listed_like_ours(clean, monkeypatch, capsys, tmp_path):
    info_dir = tmp_path / "burn_third_party-2.5.dist-info"
    info_dir.mkdir()
    (info_dir / "METADATA").write_text("Metadata-Version: 2.1\nName: burn-third-party\nVersion: 2.5\n")
    (info_dir / "entry_points.txt").write_text("[burn]\nthird = burnfake_third_party._plugin\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    plugins.reload()
    _, info = _info(capsys)  # its module does not exist: listed all the same, and reported broken
    row = next(p for p in info["packages"] if p["name"] == "burn-third-party")
    assert row == {
        "name": "burn-third-party",
        "module": "burnfake_third_party",
        "installed": True,
        "version": "2.5",
        "note": "",
        "install": "",
    }
    assert [b["dist"] for b in info["broken"]] == ["burn-third-party"]


def test_package_version_falls_back_to_the_module(clean):
    assert _cli._package_version("burn-core-not-a-dist", "burn") == (
        True,
        burn.__version__,
        "importable, but no installed metadata",
    )
    assert _cli._package_version("burn-not-a-dist", "burnfake_not_a_module") == (False, None, "")


def test_usage(clean, capsys):
    assert _cli.main([]) == 0
    assert "info" in capsys.readouterr().out
    with pytest.raises(SystemExit) as exc:
        _cli.main(["info", "--timeout", "0"])
    assert exc.value.code == 2
    assert "--timeout: expected a positive number" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        _cli.main(["--version"])
    assert capsys.readouterr().out.strip() == f"burn-py {burn.__version__}"


def test_python_m_burn(clean):
    proc = subprocess.run(
        [sys.executable, "-m", "burn", "info", "--json"], capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["burn_version"] == burn.__version__
