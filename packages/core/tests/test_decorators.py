"""Backend decorators as plugins: ``DecoratorSpec``, the ``burn_register_decorators`` hook, and how
``burn.device(name, autodiff=True, **keywords)`` finds them in the registry (burn-core imports none)."""

from __future__ import annotations

import warnings

import burn
import pytest
from burn import plugins
from burn.backend import Backend
from burn.plugins import DecoratorSpec, PluginError, hookimpl


class Tagged:
    """A pass-through decorator that only records what it wraps and the options it got."""

    def __init__(self, inner: Backend, device: burn.Device, level: int = 0) -> None:
        self.inner, self.device, self.level = inner, device, level
        self.name = f"tagged<{inner.name}>"

    def __getattr__(self, name: str):  # every op goes to the inner backend
        return getattr(self.inner, name)


class TaggedPlugin:
    @hookimpl
    def burn_register_decorators(self, register):
        register(DecoratorSpec(name="tagged", factory=Tagged, options=("level",), description="test"))


@pytest.fixture
def tagged(clean):
    return plugins.register_plugin(TaggedPlugin(), name="tagged-plugin")


def _registry() -> plugins.Registry:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", plugins.PluginWarning)
        return plugins.registry()


def test_autodiff_is_a_plugin_of_burn_autodiff(clean):
    pytest.importorskip("burn_autodiff")
    reg = _registry()
    spec = reg.decorator("autodiff")
    assert spec.options == ("checkpointing",)
    assert reg.provider("decorator", "autodiff").dist == "burn-autodiff"
    dev = burn.device("cpu", autodiff=True, checkpointing="balanced")
    assert type(dev.backend).__name__ == "Autodiff" and dev.backend.checkpointing == "balanced"
    assert dev.backend.inner is burn.device("cpu").backend


def test_a_registered_decorator_is_switched_on_by_keyword(tagged):
    assert tagged.provides == ["decorator:tagged"]
    dev = burn.device("cpu:3", tagged=True, level=2)
    assert str(dev) == "cpu:3+tagged" and dev.decorators == ("tagged",) and not dev.autodiff
    assert dev == burn.device("cpu:3", tagged=True, level=2) and dev != burn.device("cpu:3", tagged=True)
    backend = dev.backend
    assert isinstance(backend, Tagged) and backend.level == 2 and backend.device is dev
    assert backend.inner is burn.device("cpu:3").backend
    x = burn.tensor([1.0, 2.0], device=dev)
    assert (x + x).tolist() == [2.0, 4.0]
    assert burn.device("cpu:3", tagged=False) == burn.device("cpu:3")


def test_autodiff_wraps_outermost_and_inner_keeps_the_other_decorators(tagged):
    pytest.importorskip("burn_autodiff")
    dev = burn.device("cpu", autodiff=True, tagged=True, level=5, checkpointing="balanced")
    assert str(dev) == "cpu+tagged+autodiff"
    assert dev.inner == burn.device("cpu", tagged=True, level=5) and dev.inner.options == (("level", 5),)
    outer = dev.backend
    assert outer.checkpointing == "balanced" and outer.inner is dev.inner.backend
    assert isinstance(outer.inner, Tagged) and outer.inner.level == 5
    x = burn.tensor([3.0], device=dev).require_grad()
    assert x.grad((x * x).sum().backward()).tolist() == [6.0]


def test_a_device_gains_decorators(tagged):
    base = burn.device("cpu", tagged=True, level=1)
    assert burn.device(base) is base
    more = burn.device(base, level=4)
    assert more.decorators == ("tagged",) and more.options == (("level", 4),)
    assert burn.device(more, tagged=False) == burn.device("cpu")  # its options go with it


def test_keyword_errors_name_the_decorator(tagged):
    with pytest.raises(
        ValueError, match=r"options \['level'\] apply to the tagged decorator; pass tagged=True"
    ):
        burn.device("cpu", level=3)
    with pytest.raises(
        ValueError, match=r"unknown keyword 'fusing'; the registered decorators take .*tagged=True with level"
    ):
        burn.device("cpu", fusing=True)
    with pytest.raises(TypeError, match=r"tagged= switches the 'tagged' decorator on or off, got 'yes'"):
        burn.device("cpu", tagged="yes")


def test_decorator_keywords_may_not_clash(tagged):
    class Clash:
        @hookimpl
        def burn_register_decorators(self, register):
            register(DecoratorSpec(name="other", factory=Tagged, options=("level",)))

    with pytest.raises(PluginError, match=r"decorator keyword 'level' is already used by decorator 'tagged'"):
        plugins.register_plugin(Clash(), name="clash")

    class Reserved:
        @hookimpl
        def burn_register_decorators(self, register):
            register(DecoratorSpec(name="mine", factory=Tagged, options=("autodiff",)))

    with pytest.raises(PluginError, match=r"'autodiff' is a parameter of burn.device\(\) itself"):
        plugins.register_plugin(Reserved(), name="reserved")


@pytest.mark.parametrize(
    ("kwargs", "error"),
    [
        ({"name": "Bad Name", "factory": Tagged}, ValueError),
        ({"name": "ok", "factory": 42}, TypeError),
        ({"name": "ok", "factory": Tagged, "options": "level"}, TypeError),
        ({"name": "ok", "factory": Tagged, "options": ("ok",)}, ValueError),
        ({"name": "ok", "factory": Tagged, "options": ("a", "a")}, ValueError),
    ],
)
def test_decorator_spec_checks_its_fields(kwargs, error):
    with pytest.raises(error, match="DecoratorSpec"):
        DecoratorSpec(**kwargs)


def test_burn_info_lists_decorators(tagged, capsys):
    from burn import _cli

    info = _cli.collect_info(timeout=5)
    row = next(d for d in info["decorators"] if d["name"] == "tagged")
    assert row["options"] == ["level"] and row["dist"] == "(registered in code)"
    assert _cli.main(["info"]) == 0
    section = capsys.readouterr().out.split("Decorators:")[1].split("Metric collectors:")[0]
    assert "tagged (registered in code) options: level" in {" ".join(x.split()) for x in section.splitlines()}


def test_to_and_from_the_autodiff_decorator_shares_the_value():
    """``t.to(autodiff device)`` of a tensor on the decorator's own inner device wraps its value (no
    copy through the host, no read of a lazy fused value); back off it, the value is detached."""
    dev = burn.device("cpu", fusion=True)
    adev = burn.device("cpu", autodiff=True, fusion=True)
    assert adev.backend.inner is dev.backend
    t = burn.ones(3, device=dev) * 2  # lazy: still recorded in the stream
    flushes = dev.backend.stats["flushes"]
    lifted = t.to(adev).require_grad()
    assert adev.backend.inner_prim(lifted.primitive) is t.primitive
    assert dev.backend.stats["flushes"] == flushes  # nothing was read
    down = (lifted * 3).to(dev)
    assert down.device == dev and down.tolist() == [6.0, 6.0, 6.0]
    assert lifted.grad((lifted * 3).sum().backward()).tolist() == [3.0, 3.0, 3.0]
