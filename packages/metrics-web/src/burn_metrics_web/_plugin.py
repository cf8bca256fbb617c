"""Entry point of burn_metrics_web (group ``burn``): one collector per browser source, and the ``web``
renderer.

Import-light and numpy-free: ``js`` is imported only when a collector is built or probed, and only
under Pyodide; everywhere else each collector is listed as unavailable with the reason.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from burn.plugins import MetricCollectorSpec, hookimpl

from ._collector import source_available
from ._sources import SOURCES

GROUP = "metrics-wasm"  # the burn-core extra that installs this package
RENDERER = "web"


def _maker(name: str) -> Callable[[], Any]:
    def make() -> Any:
        from ._collector import WebCollector

        return WebCollector([name])

    return make


def _checker(name: str) -> Callable[[], tuple[bool, str]]:
    return lambda: source_available(name)


def _make_renderer(**kwargs: Any) -> Any:
    from ._renderer import WebRenderer

    return WebRenderer(**kwargs)


@hookimpl
def burn_register_metric_collectors(register: Callable[[MetricCollectorSpec], None]) -> None:
    # one collector per source (no combined one: burn_train's Learner adds every available collector
    # as a system metric, and overlapping collectors would show the same figure twice)
    for name, source in SOURCES.items():
        register(
            MetricCollectorSpec(
                name, _maker(name), _checker(name), group=GROUP, description=source.description
            )
        )


@hookimpl
def burn_register_renderers(register: Callable[[str, Callable[..., Any]], None]) -> None:
    register(RENDERER, _make_renderer)
