"""The interactive dashboard (rich): metric plots, text metrics, status, autotune panel, progress.

Frames are drawn by the TUI's own timer thread (``fps`` >= 5) from ``DashboardState`` snapshots, so the
screen moves while the training thread is busy in a long first batch or in kernel autotuning
(tracel-ai/burn#2853). The first frame is drawn in ``start()``, before the first batch. Where
threads don't exist, ``tick()`` (called by the inline processor and on autotune events) redraws at
most ``fps`` times per second. Keys: ``q`` opens stop/kill/cancel, left/right pick the metric,
up/down switch the plot between recent and full history. The plot panel's title names the selected
metric (with every metric's tab where the width allows) and its bottom border carries the key hints,
so they show on an 80x24 terminal.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

from .._sync import threads_available
from ._base import Renderer, fmt_duration
from ._keys import KeyReader
from ._plot import Series, bounds, braille_chart
from ._state import Snapshot, blocking_tuning, compile_line, latest, tuning_line

if TYPE_CHECKING:
    from rich.console import Console, ConsoleOptions
    from rich.segment import Segment

SERIES_STYLE = {"train": "cyan", "valid": "magenta"}
PLOT_KINDS = ("recent", "full")
RECENT_POINTS = 300


class _Chart:
    """A renderable line chart sized to the space rich gives it."""

    def __init__(self, series: Series, fmt: Callable[[float], str]) -> None:
        self.series, self.fmt = series, fmt

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> Iterator[Segment]:
        from rich.segment import Segment
        from rich.style import Style

        height = max(2, (options.height or 10) - 1)
        box = bounds(self.series)
        labels = ("", "") if box is None else (self.fmt(box[3]), self.fmt(box[2]))
        label_w = min(12, max(len(labels[0]), len(labels[1]), 1))
        width = max(4, options.max_width - label_w - 1)
        rows = braille_chart(self.series, width, height)
        for i, row in enumerate(rows):
            label = labels[0] if i == 0 else labels[1] if i == height - 1 else ""
            yield Segment(label[:label_w].rjust(label_w) + "│", Style(dim=True))
            for text, owner in row:
                yield Segment(text, Style(color=SERIES_STYLE.get(owner)) if owner else None)
            yield Segment.line()
        if box is None:
            legend = "waiting for the first batch..."
        else:
            legend = "  ".join(f"━ {name}" for name in self.series if self.series[name])
            legend += f"   x: epoch {box[0]:.2f} .. {box[1]:.2f}"
        yield Segment(" " * (label_w + 1) + legend[:width], Style(dim=True))
        yield Segment.line()


class TuiRenderer(Renderer):
    """The live dashboard. ``console`` defaults to a terminal console; pass a
    ``rich.console.Console(record=True, width=.., height=.., file=io.StringIO())`` to render
    headless (``last_frame`` then holds the text of the latest frame)."""

    name = "tui"

    def __init__(
        self, console: Any = None, fps: float = 8.0, keys: bool = True, live: bool | None = None
    ) -> None:
        if fps < 5:
            raise ValueError(f"TuiRenderer: fps must be >= 5 so the screen keeps moving, got {fps}")
        self.console = console
        self.fps = float(fps)
        self.metric_index = 0
        self.plot_kind = "recent"
        self.popup = False
        self.frame_count = 0
        self.last_frame = ""
        self._keys = KeyReader() if keys else None
        self._live_wanted = live
        self._live: Any = None
        self._thread: Any = None
        self._running = False
        self._last_draw = 0.0
        self._draw_lock: Any = None

    # ---------------------------------------------------------------- lifecycle
    def start(self, state: Any, interrupter: Any) -> None:
        super().start(state, interrupter)
        from rich.console import Console

        from .._sync import make_lock

        self._draw_lock = make_lock()
        if self.console is None:
            self.console = Console()
        live = self.console.is_terminal if self._live_wanted is None else self._live_wanted
        if live:
            from rich.live import Live

            self._live = Live(console=self.console, screen=True, auto_refresh=False, transient=False)
            self._live.start()
        if self._keys is not None:
            self._keys.start()
        self.draw()  # the first frame, before the first batch
        if threads_available():
            import threading

            self._running = True
            self._thread = threading.Thread(target=self._loop, name="burn-train-tui", daemon=True)
            self._thread.start()

    def _loop(self) -> None:
        period = 1.0 / self.fps
        while self._running:
            started = time.monotonic()
            try:
                self.poll_keys()
                self.draw()
            except Exception as exc:  # a drawing bug must not take training down; show it once
                self._running = False
                self.console.print(f"[red]dashboard stopped: {type(exc).__name__}: {exc}[/red]")
                return
            time.sleep(max(0.0, period - (time.monotonic() - started)))

    def tick(self) -> None:
        if self._thread is None and time.monotonic() - self._last_draw >= 1.0 / self.fps:
            self.poll_keys()
            self.draw()

    def on_autotune(self, event: Any) -> None:
        self.tick()  # without a timer thread, autotune events are the only chance to redraw

    def close(self) -> None:
        if self._draw_lock is None:  # never started (fit failed before the first frame)
            return
        self._running = False
        if self._thread is not None:
            self._thread.join(2.0)
            self._thread = None
        if self._keys is not None:
            self._keys.close()
        self.draw()
        if self._live is not None:
            self._live.stop()
            self._live = None

    # ---------------------------------------------------------------- keys
    def poll_keys(self) -> None:
        if self._keys is not None:
            for key in self._keys.poll():
                self.handle_key(key)

    def handle_key(self, key: str) -> None:
        """Apply one key: q opens the quit popup; there s stops, k kills, c/escape cancels."""
        if self.popup:
            if key == "s":
                self.interrupter.stop("stopped from the dashboard")
                self.state.add_status("stopping after this batch (from the dashboard)")
            elif key == "k":
                import _thread

                self.interrupter.stop("killed from the dashboard")
                self.state.add_status("killed from the dashboard: stopping now")
                _thread.interrupt_main()  # a KeyboardInterrupt on the training thread, like Ctrl-C
            if key in ("s", "k", "c", "escape", "q"):
                self.popup = False
            return
        actions = {
            "q": lambda: setattr(self, "popup", True),
            "right": lambda: self._move_metric(1),
            "left": lambda: self._move_metric(-1),
            "up": self._toggle_plot,
            "down": self._toggle_plot,
        }
        action = actions.get(key)
        if action is not None:
            action()

    def _move_metric(self, step: int) -> None:
        self.metric_index += step

    def _toggle_plot(self) -> None:
        self.plot_kind = PLOT_KINDS[(PLOT_KINDS.index(self.plot_kind) + 1) % len(PLOT_KINDS)]

    # ---------------------------------------------------------------- frames
    def draw(self) -> None:
        with self._draw_lock:
            frame = self.frame()
            if self._live is not None:
                self._live.update(frame, refresh=True)
            else:
                self.console.print(frame)
                if getattr(self.console, "record", False):
                    self.last_frame = self.console.export_text(clear=True)
            self.frame_count += 1
            self._last_draw = time.monotonic()

    def selected_metric(self, names: list[str]) -> str | None:
        return names[self.metric_index % len(names)] if names else None

    def frame(self) -> Any:
        """The current dashboard as a rich renderable."""
        from rich.layout import Layout

        names = self.state.snapshot().numeric
        selected = self.selected_metric(names)
        snap = self.state.snapshot(history_of=selected)
        layout = Layout()
        layout.split_column(Layout(name="top", ratio=1), Layout(name="progress", size=3))
        layout["top"].split_row(Layout(name="left", ratio=3), Layout(name="right", ratio=2))
        layout["left"].split_column(Layout(name="plot", ratio=3), Layout(name="text", ratio=2))
        layout["right"].split_column(Layout(name="status", size=10), Layout(name="autotune"))
        layout["plot"].update(self._plot_panel(snap, selected))
        layout["text"].update(self._text_panel(snap))
        layout["status"].update(self._status_panel(snap))
        layout["autotune"].update(self._autotune_panel(snap))
        layout["progress"].update(self._progress_panel(snap))
        if self.popup:
            layout["status"].update(self._popup_panel())
        return layout

    def _plot_title(self, names: Sequence[str], selected: str | None) -> Any:
        """Every metric's tab when they fit the panel, else the selected one as ``Loss [1/7]``."""
        from rich.text import Text

        if selected is None:
            return Text("Metrics")
        width = self._plot_width() - 4  # the border's corners and the spaces around the title
        tabs = Text()
        for name in names:
            tabs.append(f" {name} ", style="reverse bold" if name == selected else "dim")
        if tabs.cell_len <= width:
            return tabs
        index = names.index(selected) + 1
        title = Text(f" {selected} ", style="reverse bold") + Text(f" [{index}/{len(names)}]", style="dim")
        title.truncate(max(width, 1), overflow="ellipsis")
        return title

    def _plot_width(self) -> int:
        width = getattr(self.console, "width", 80) or 80
        return width * 3 // 5  # the left column's share of the layout (ratio 3 : 2)

    def _plot_hints(self) -> Any:
        from rich.text import Text

        return Text(f"←→ metric  ↑↓ plot: {self.plot_kind}", style="dim")

    def _plot_panel(self, snap: Snapshot, selected: str | None) -> Any:
        from rich.panel import Panel
        from rich.text import Text

        names = snap.numeric
        title = self._plot_title(names, selected)
        hints = self._plot_hints()
        if selected is None:
            return Panel(
                Text("waiting for the first batch...", style="dim"),
                title=title,
                title_align="left",
                subtitle=hints,
                subtitle_align="right",
            )
        series: Series = snap.history.get(selected, {})
        if self.plot_kind == "recent":
            train = series.get("train", [])[-RECENT_POINTS:]
            x0 = train[0][0] if train else -float("inf")
            series = {
                "train": train,
                "valid": [p for p in series.get("valid", []) if p[0] >= x0][-RECENT_POINTS:],
            }

        def fmt(value: float, name: str = selected) -> str:
            return self.state.format_axis(name, value)

        return Panel(
            _Chart({s: series.get(s, []) for s in ("train", "valid")}, fmt),
            title=title,
            title_align="left",
            subtitle=hints,
            subtitle_align="right",
        )

    def _text_panel(self, snap: Snapshot) -> Any:
        from rich.panel import Panel
        from rich.table import Table
        from rich.text import Text

        table = Table(expand=True, show_edge=False, pad_edge=False, box=None)
        table.add_column("Metric", style="bold", no_wrap=True)
        table.add_column("Train", style=SERIES_STYLE["train"])
        table.add_column("Valid", style=SERIES_STYLE["valid"])
        train, valid = snap.splits["train"].entries, snap.splits["valid"].entries
        for name in list(dict.fromkeys([*train, *valid])):
            cells = [Text(getattr(split.get(name), "formatted", "")) for split in (train, valid)]
            table.add_row(Text(name), *cells)
        return Panel(table, title="Text metrics (batch value, epoch so far)", title_align="left")

    def _status_panel(self, snap: Snapshot) -> Any:
        from rich.panel import Panel
        from rich.text import Text

        view = snap.splits.get(snap.mode) or snap.splits["train"]
        lines = [
            f"Mode      : {snap.mode}",
            f"Epoch     : {snap.epoch}/{snap.epoch_total}",
            f"Iteration : {view.iteration}",
            f"Items     : {view.progress.items_processed}/{view.progress.items_total}",
            f"Elapsed   : {fmt_duration(snap.elapsed)}",
        ]
        lines += [compile_line(snap)] if compile_line(snap) else []
        shown = blocking_tuning(snap.autotune_active) or latest(snap.autotune_active)
        lines += [f"» {tuning_line(shown)}"] if shown is not None else []
        lines += [f"» {text}" for text in snap.status[-2:]]
        return Panel(Text("\n".join(lines)), title="Status (q: quit)", title_align="left")

    def _autotune_panel(self, snap: Snapshot) -> Any:
        from rich.panel import Panel
        from rich.text import Text

        text = Text(no_wrap=True, overflow="ellipsis")
        active = snap.autotune_active
        for event in active:
            bar = ""
            if event.total:
                filled = int(10 * event.step / event.total)
                bar = " [" + "█" * filled + "·" * (10 - filled) + "]"
            text.append(f"⟳ {event.describe()}{bar}\n", style="yellow")
        for event in reversed(snap.autotune_recent):
            if event.done:
                text.append(f"✓ {event.describe()}\n", style="green")
        if not snap.autotune_count:
            text.append("no kernel autotuning or compilation so far", style="dim")
        title = f"Autotune ({len(active)} active)"
        return Panel(
            text,
            title=title,
            title_align="left",
            subtitle=f"{snap.autotune_count} events",
            subtitle_align="right",
        )

    def _progress_panel(self, snap: Snapshot) -> Any:
        from rich.panel import Panel
        from rich.progress_bar import ProgressBar
        from rich.table import Table
        from rich.text import Text

        mode = snap.mode if snap.mode in snap.splits else "train"
        view = snap.splits[mode]
        done, total = view.progress.items_processed, view.progress.items_total
        grid = Table.grid(expand=True, padding=(0, 1))
        grid.add_column(no_wrap=True)
        grid.add_column(ratio=1)
        grid.add_column(no_wrap=True)
        grid.add_row(
            Text(f"[{mode}] epoch {snap.epoch}/{snap.epoch_total}"),
            ProgressBar(
                total=max(total, 1),
                completed=done,
                style="grey23",
                complete_style=SERIES_STYLE.get(mode, "bar.complete"),
            ),
            Text(f"{100 * view.progress.fraction:5.1f}%  {self._eta_text(snap, view)}"),
        )
        return Panel(grid, title=self._progress_title(snap.device), title_align="left")

    def _eta_text(self, snap: Snapshot, view: Any) -> str:
        """The ETAs, or while a kernel is tuned or compiled what that is: a cold run's seconds of tuning
        otherwise read as a stalled ``100.0%  ETA --:--`` (tuning in the background holds no step up: the
        ETAs stay, the Status panel says it)."""
        held = blocking_tuning(snap.autotune_active)
        if held is not None:
            return tuning_line(held)
        return (
            f"ETA {fmt_duration(view.eta_seconds(snap.now))}"
            f"  total ETA {fmt_duration(self.state.total_eta_seconds(snap.now))}"
        )

    def _progress_title(self, device: str) -> Any:
        """``Progress on wgpu:0 (llvmpipe (LLVM 15.0.6, 256 bits) (Vulkan, CPU), software), float32``: the
        device across the dashboard's full width; shortened (adapter details dropped, then cut) only
        where the terminal is too narrow, so "software" stays in sight when it applies."""
        from rich.text import Text

        from ..learner._describe import compact_device

        if not device:
            return Text("Progress")
        width = (getattr(self.console, "width", 80) or 80) - 4  # the border's corners, the spaces
        title = f"Progress on {device}"
        if len(title) > width:
            title = f"Progress on {compact_device(device)}"
        text = Text(title)
        text.truncate(max(width, 1), overflow="ellipsis")
        return text

    def _popup_panel(self) -> Any:
        from rich.panel import Panel
        from rich.text import Text

        body = "Quit training?\n\n (s) stop: finish this batch, return the model\n (k) kill: interrupt now\n (c) cancel"
        return Panel(Text(body, style="bold"), title="Quit", border_style="red")
