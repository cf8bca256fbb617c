"""burn-core's backend keyword options (``BackendSpec.options``), which the remote backend is the first
user of: the factory gets the options given, each set of values is its own backend instance, decorators
stack on top with the options kept, and wrong names are clear errors."""

from __future__ import annotations

import burn
import pytest
from burn.plugins import BackendSpec, hookimpl


class _Plugin:
    built: list[tuple[int, dict]] = []

    @hookimpl
    def burn_register_backends(self, register):
        def factory(index, **options):
            _Plugin.built.append((index, options))
            backend = burn.device("cpu").backend
            return type(backend)()  # a fresh numpy backend per device

        register(BackendSpec(name="opted", factory=factory, options=("flavour", "level")))


@pytest.fixture
def opted():
    plugin = _Plugin()
    _Plugin.built.clear()
    burn.plugins.register_plugin(plugin, "opted-test")
    yield
    burn.plugins.unregister_plugin(plugin)


def test_factory_gets_the_options_given(opted):
    dev = burn.device("opted:2", flavour="mint")
    assert dev.backend_options == (("flavour", "mint"),)
    assert burn.tensor([1.0, 2.0], device=dev).sum().item() == 3.0
    assert _Plugin.built == [(2, {"flavour": "mint"})]
    burn.device("opted", level=3).backend  # noqa: B018 (builds it)
    burn.device("opted").backend  # noqa: B018
    assert _Plugin.built[1:] == [(0, {"level": 3}), (0, {})]
    # same values: the same backend; other values: another one
    assert burn.device("opted:2", flavour="mint").backend is dev.backend
    assert burn.device("opted:2", flavour="lime").backend is not dev.backend


def test_decorators_keep_the_backend_options(opted):
    dev = burn.device("opted", flavour="mint", autodiff=True)
    assert dev.inner.backend_options == (("flavour", "mint"),)
    again = burn.device(burn.device("opted", flavour="mint"), autodiff=True, level=1)
    assert again.backend_options == (("flavour", "mint"), ("level", 1))
    x = burn.tensor([3.0], device=dev).require_grad()
    assert x.grad((x * x).sum().backward()).tolist() == [6.0]


def test_unknown_keyword_names_backend_options_and_decorators(opted):
    with pytest.raises(
        ValueError, match=r"unknown keyword 'flavor'; backend 'opted' takes flavour, level, and "
    ):
        burn.device("opted", flavor="mint")


@pytest.mark.parametrize(
    ("options", "error", "message"),
    [
        ("url", TypeError, "expected a tuple of keyword names"),
        (("not a name",), ValueError, "expected keyword names"),
        (("autodiff",), ValueError, "'autodiff' is a parameter of burn.device"),
        (("url", "url"), ValueError, "repeats a name"),
    ],
)
def test_spec_checks_option_names(options, error, message):
    with pytest.raises(error, match=message):
        BackendSpec(name="x", factory=lambda index: None, options=options)
