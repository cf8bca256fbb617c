"""First-party names that are not installed say which burn-core extra installs them.

A bare ``pip install burn-core`` is simulated on top of the workspace (where every package is
installed): ``BURN_DISABLE_PLUGINS`` keeps a distribution's plugin out of the registry, and
``_known._entry_point_names`` / ``_discovery.distributions`` are patched to report it as absent. The table of
first-party names (``burn.plugins._known.KNOWN``) is checked against what the real plugins register and
against burn-core's extras.
"""

from __future__ import annotations

import json
import re
import sys
import tomllib
import warnings
from pathlib import Path

import burn
import pytest
from burn import _cli, plugins
from burn.plugins import PluginWarning, _discovery, _known

CORE = Path(__file__).resolve().parents[1]


def _registry() -> plugins.Registry:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PluginWarning)
        return plugins.registry()


def _uninstall(monkeypatch: pytest.MonkeyPatch, *dists: str) -> None:
    """Make ``dists`` look absent: their plugins are skipped and their metadata is not found."""
    monkeypatch.setenv("BURN_DISABLE_PLUGINS", ",".join(dists))
    real_entry_points, real_distributions = _known._entry_point_names, _discovery.distributions
    monkeypatch.setattr(_known, "_entry_point_names", lambda d: None if d in dists else real_entry_points(d))
    monkeypatch.setattr(
        _discovery, "distributions", lambda: [d for d in real_distributions() if d.name not in dists]
    )
    plugins.reload()


# ---------------------------------------------------------------- the table


def test_table_matches_the_plugins_and_the_extras(clean):
    reg = _registry()
    extras = tomllib.loads((CORE / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    for dist in _known.KNOWN:
        assert any(req.startswith(dist.dist) for req in extras[dist.extra]), (dist.extra, extras[dist.extra])
        for tag in dist.provides:
            kind, _, name = tag.partition(":")
            info = reg.provider(kind, name)
            assert info is not None and info.dist == dist.dist, tag
        provided = {t for p in reg.plugins if p.dist == dist.dist for t in p.provides}
        assert provided <= set(dist.provides), f"{dist.dist} registers names missing from KNOWN"
    installed = {_discovery.normalize(d.name) for d in _discovery.distributions()}
    assert {k.dist for k in _known.KNOWN} <= installed  # the workspace has everything
    assert _known.missing(reg) == []


# ---------------------------------------------------------------- burn.device and the registry


@pytest.mark.parametrize(("name", "dist"), [("wgpu", "burn-wgpu"), ("cuda", "burn-cuda")])
def test_device_of_a_backend_not_installed_names_the_extra(clean, name, dist):
    _uninstall(clean, dist)
    with pytest.raises(burn.DeviceError) as exc:
        burn.device(name)
    assert str(exc.value).startswith(
        f"device: backend {name!r} is not installed: pip install 'burn-core[{name}]'; registered backends: "
    )
    with pytest.raises(burn.DeviceError, match=rf"not installed: pip install 'burn-core\[{name}\]'"):
        burn.device(f"{name}:1", autodiff=True)


def test_autodiff_not_installed_names_the_extra(clean):
    _uninstall(clean, "burn-autodiff")
    (autodiff,) = [k for k in _known.KNOWN if "decorator:autodiff" in k.provides]
    with pytest.raises(burn.BackendUnavailableError) as exc:
        burn.device("cpu:7", autodiff=True)
    assert str(exc.value) == (
        f"device cpu:7: autodiff=True: decorator 'autodiff' is not installed: {autodiff.install}; "
        "registered decorators: fusion"
    )
    with pytest.raises(burn.BackendUnavailableError, match=re.escape(autodiff.install)):
        burn.device("cpu", autodiff=True, checkpointing="balanced")


@pytest.mark.filterwarnings("ignore::burn.plugins.PluginWarning")
def test_autodiff_that_fails_to_import_says_so(clean):
    for module in ("burn_autodiff", "burn_autodiff._plugin"):  # importing the entry point raises
        clean.setitem(sys.modules, module, None)
    plugins.reload()
    with pytest.raises(
        burn.BackendUnavailableError,
        match=r"'autodiff' \(from burn-autodiff\) failed to load: ModuleNotFound",
    ):
        burn.zeros((2,), device=burn.device("cpu:7", autodiff=True))


def test_collector_not_installed_names_the_extra(clean):
    _uninstall(clean, "burn-metrics-cuda", "burn-metrics-web")
    reg = _registry()
    with pytest.raises(
        KeyError, match=r"collector 'cuda' is not installed: pip install 'burn-core\[metrics-cuda\]'"
    ):
        reg.collector("cuda")
    with pytest.raises(KeyError, match=r"'web-gpu' is not installed: pip install 'burn-core\[metrics-web\]'"):
        reg.collector("web-gpu")


def test_installed_but_not_loaded_says_why(clean):
    clean.setenv("BURN_DISABLE_PLUGINS", "burn-wgpu")
    plugins.reload()
    with pytest.raises(
        burn.DeviceError, match=r"'wgpu' \(from burn-wgpu\) is disabled by BURN_DISABLE_PLUGINS"
    ):
        burn.device("wgpu")
    clean.delenv("BURN_DISABLE_PLUGINS")
    clean.setenv("BURN_DISABLE_PLUGIN_AUTOLOAD", "1")
    plugins.reload()
    with pytest.raises(
        KeyError, match=r"'cpu-use' \(from burn-train\) is not loaded: BURN_DISABLE_PLUGIN_AUTOLOAD"
    ):
        _registry().collector("cpu-use")


def test_broken_first_party_plugin_is_named_with_its_error(clean):
    reg = plugins.Registry()
    reg.broken.append(
        plugins.BrokenPlugin("wgpu", "burn_wgpu._plugin", "burn-wgpu", "ImportError: no libwgpu")
    )
    with pytest.raises(KeyError, match=r"'wgpu' \(from burn-wgpu\) failed to load: ImportError: no libwgpu"):
        reg.backend("wgpu")


def test_other_names_stay_unknown(clean):
    _uninstall(clean, "burn-wgpu")
    with pytest.raises(burn.DeviceError, match=r"^device: unknown backend 'vulkan'; registered backends: "):
        burn.device("vulkan")
    with pytest.raises(KeyError, match=r"unknown metric collector 'gpu-temp'"):
        _registry().collector("gpu-temp")


# ---------------------------------------------------------------- burn info


def test_burn_info_lists_what_is_not_installed_with_its_extra(clean, capsys):
    _uninstall(clean, "burn-wgpu", "burn-metrics-cuda", "burn-autodiff")
    assert _cli.main(["info", "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    packages = {p["name"]: p for p in info["packages"]}
    assert packages["burn-wgpu"]["install"] == "pip install 'burn-core[wgpu]'"
    assert packages["burn-autodiff"]["install"] == "pip install 'burn-core[autodiff]'"
    assert packages["burn-core"]["install"] == "" and packages["burn-train"]["install"] == ""
    missing = {(m["kind"], m["name"]): m for m in info["missing"]}
    # what the three uninstalled distributions would have registered (`burn web` is burn-onnx's command)
    assert set(missing) == {
        ("backend", "wgpu"),
        ("collector", "cuda"),
        ("decorator", "autodiff"),
    }
    assert missing["backend", "wgpu"] == {
        "kind": "backend",
        "name": "wgpu",
        "dist": "burn-wgpu",
        "installed": False,
        "install": "pip install 'burn-core[wgpu]'",
        "reason": "backend 'wgpu' is not installed: pip install 'burn-core[wgpu]'",
    }

    assert _cli.main(["info"]) == 0
    out = capsys.readouterr().out
    rows = {" ".join(line.split()) for line in out.splitlines()}
    assert "burn-wgpu not installed pip install 'burn-core[wgpu]'" in rows
    assert "burn-autodiff not installed pip install 'burn-core[autodiff]'" in rows
    backends = out.split("Backends:")[1].split("Metric collectors:")[0]
    assert "wgpu not installed burn-wgpu pip install 'burn-core[wgpu]'" in {
        " ".join(line.split()) for line in backends.splitlines()
    }
    decorators = out.split("Decorators:")[1].split("Metric collectors:")[0]
    assert "autodiff burn-autodiff not installed: pip install 'burn-core[autodiff]'" in {
        " ".join(line.split()) for line in decorators.splitlines()
    }
    collectors = out.split("Metric collectors:")[1].split("Broken plugins:")[0]
    assert "cuda not installed - burn-metrics-cuda pip install 'burn-core[metrics-cuda]'" in {
        " ".join(line.split()) for line in collectors.splitlines()
    }


def test_burn_info_shows_why_an_installed_plugin_is_off(clean, capsys):
    clean.setenv("BURN_DISABLE_PLUGINS", "wgpu")
    plugins.reload()
    assert _cli.main(["info"]) == 0
    backends = capsys.readouterr().out.split("Backends:")[1].split("Metric collectors:")[0]
    line = next(" ".join(x.split()) for x in backends.splitlines() if x.split()[:1] == ["wgpu"])
    assert (
        line
        == "wgpu not loaded burn-wgpu backend 'wgpu' (from burn-wgpu) is disabled by BURN_DISABLE_PLUGINS"
    )
