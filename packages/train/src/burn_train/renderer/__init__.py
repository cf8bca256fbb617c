"""burn_train.renderer: the dashboard (TUI), plain CLI log lines, and none. numpy-free.

``make_renderer("auto")`` picks the TUI when stdout is a terminal and CLI lines otherwise. Renderers
draw from ``DashboardState.snapshot()``: a frozen, typed ``Snapshot``.
"""

from ._base import NoneRenderer, Renderer, fmt_duration
from ._cli import CliRenderer
from ._keys import KeyReader, parse_keys
from ._plot import braille_chart, chart_text
from ._select import make_renderer
from ._state import DashboardState, Snapshot, SplitView


def __getattr__(name: str) -> object:
    if name == "TuiRenderer":  # rich loads only when the TUI is used
        from ._tui import TuiRenderer

        return TuiRenderer
    raise AttributeError(f"module 'burn_train.renderer' has no attribute {name!r}")


__all__ = [
    "CliRenderer",
    "DashboardState",
    "KeyReader",
    "NoneRenderer",
    "Renderer",
    "Snapshot",
    "SplitView",
    "TuiRenderer",
    "braille_chart",
    "chart_text",
    "fmt_duration",
    "make_renderer",
    "parse_keys",
]
