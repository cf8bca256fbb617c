"""Pick a renderer by name: "auto" (TUI on a terminal, CLI lines otherwise, the "web" renderer in a
browser), "tui", "cli", "none",
or a name a plugin registered through ``burn_register_renderers``."""

from __future__ import annotations

import sys
from collections.abc import Callable
from importlib.util import find_spec
from typing import Any

from ._base import NoneRenderer, Renderer
from ._cli import CliRenderer


def _tui(**kwargs: Any) -> Renderer:
    if find_spec("rich") is None:
        raise ImportError("renderer 'tui' needs rich (pip install 'burn-train[tui]')")
    from ._tui import TuiRenderer

    return TuiRenderer(**kwargs)


BUILTIN: dict[str, Callable[..., Renderer]] = {"tui": _tui, "cli": CliRenderer, "none": NoneRenderer}


def _stdout_is_terminal() -> bool:
    try:
        return bool(sys.stdout.isatty())
    except (AttributeError, ValueError):
        return False


def make_renderer(kind: str | Renderer = "auto", **kwargs: Any) -> Renderer:
    """A renderer instance for ``kind`` (a Renderer instance is returned as is)."""
    if isinstance(kind, Renderer):
        return kind
    if not isinstance(kind, str):
        raise TypeError(f"renderer: expected a name or a Renderer, got {type(kind).__name__}")
    if kind == "auto":
        kind = _auto()
    factory = BUILTIN.get(kind)
    if factory is None:
        from burn.plugins import registry

        factory = registry().renderers.get(kind)
    if factory is None:
        known = sorted({"auto", *BUILTIN, *_plugin_renderers()})
        raise ValueError(f"renderer: unknown renderer {kind!r}; expected one of {known}")
    return factory(**kwargs)


NO_RICH_NOTICE = "burn_train: the dashboard needs rich: pip install 'burn-train[tui]'; using plain lines"
_noticed: list[bool] = []  # the no-rich notice is printed once per process, not once per Learner


def _auto() -> str:
    """In a browser (Pyodide) a plugin's "web" renderer where one is installed; else the TUI on a
    terminal with rich, else CLI lines (on a terminal without rich, saying so once on stderr)."""
    if sys.platform == "emscripten" and "web" in _plugin_renderers():
        return "web"
    if not _stdout_is_terminal():
        return "cli"
    if find_spec("rich") is not None:
        return "tui"
    if not _noticed:
        _noticed.append(True)
        print(NO_RICH_NOTICE, file=sys.stderr, flush=True)
    return "cli"


def _plugin_renderers() -> list[str]:
    from burn.plugins import registry

    return list(registry().renderers)
