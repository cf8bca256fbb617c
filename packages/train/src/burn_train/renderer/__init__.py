"""burn_train.renderer: the dashboard (TUI), plain CLI log lines, and none. numpy-free.

``make_renderer("auto")`` picks the TUI when stdout is a terminal and CLI lines otherwise. Renderers
draw from ``DashboardState.snapshot()``: a frozen, typed ``Snapshot``.
"""

from burn.plugins import lazy_attributes

from ._base import NoneRenderer, Renderer, fmt_duration
from ._cli import CliRenderer
from ._keys import KeyReader, parse_keys
from ._plot import braille_chart, chart_text
from ._select import make_renderer
from ._state import DashboardState, Snapshot, SplitView

# rich loads only when the TUI is used
__getattr__ = lazy_attributes(__name__, {"TuiRenderer": "._tui"}, globals())


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
