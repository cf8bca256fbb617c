"""``WebRenderer``: burn_train's dashboard for the browser, as HTML in a page element or console lines.

Where a DOM exists (``js.document``, in a page; a web worker has none) it writes the dashboard into
the element ``element_id`` (created under ``<body>`` when missing) at most every ``interval``
seconds, and at once on epoch ends and at the end. Elsewhere (Node, a worker, CPython) it prints
compact lines, which Pyodide sends to the JavaScript console. It never waits: the inline event
processor calls it on the training loop's own thread, so drawing must stay cheap.
"""

from __future__ import annotations

import sys
import time
from typing import IO, Any

try:
    from burn_train.renderer import Renderer
except ImportError as exc:  # pragma: no cover - exercised only where burn-train is absent
    raise ImportError("the 'web' renderer needs burn-train (pip install burn-train)") from exc

from ._format import epoch_line, progress_line, render_html  # after the check: it uses burn_train too
from ._platform import PYODIDE_PLATFORM, describe, is_missing


def _page_document() -> Any:
    """``js.document`` under Pyodide in a page, else None (Node, web workers, CPython)."""
    if sys.platform != PYODIDE_PLATFORM:
        return None
    try:
        import js

        document = getattr(js, "document", None)
    except Exception:
        return None
    return None if is_missing(document) else document


class WebRenderer(Renderer):
    """HTML into ``element_id`` where a page exists, else console lines (``mode`` says which).

    ``document`` overrides the DOM document (tests pass a fake); ``console=True`` forces lines.
    ``interval``: seconds between HTML redraws and between console progress lines; ``step``: a
    console progress line is also printed every ``step`` of an epoch.
    """

    name = "web"

    def __init__(
        self,
        element_id: str = "burn-dashboard",
        interval: float = 0.5,
        step: float = 0.25,
        stream: IO[str] | None = None,
        document: Any = None,
        console: bool = False,
    ) -> None:
        if not isinstance(element_id, str) or not element_id:
            raise ValueError(f"WebRenderer: element_id must be a non-empty string, got {element_id!r}")
        if interval < 0 or not 0 < step <= 1:
            raise ValueError(f"WebRenderer: need interval >= 0 and 0 < step <= 1, got {interval!r}, {step!r}")
        self.element_id = element_id
        self.interval = float(interval)
        self.step = float(step)
        self.stream = stream
        self._document = None if console else (document if document is not None else _page_document())
        self.element: Any = None
        self.mode = "console"
        self.reason = "forced by console=True" if console else "no DOM document here"
        self.frames = 0  # HTML frames written (tests and the curious)
        self._drawn_version = -1
        self._last_draw = -float("inf")
        self._last_fraction: dict[str, float] = {}
        self._last_line = -float("inf")
        self._announced: set[tuple[str, str]] = set()

    # ---------------------------------------------------------------- target
    def _find_element(self) -> Any:
        doc = self._document
        assert doc is not None, "only a renderer drawing into a page looks for its element"
        element = doc.getElementById(self.element_id)
        if is_missing(element):
            body: Any = getattr(doc, "body", None)  # a JS object, or undefined/null
            if is_missing(body):
                raise LookupError(f"no element #{self.element_id} and no <body> to add it to")
            element = doc.createElement("div")
            element.id = self.element_id
            body.appendChild(element)
        return element

    # ---------------------------------------------------------------- hooks
    def start(self, state: Any, interrupter: Any) -> None:
        super().start(state, interrupter)
        if self._document is not None:
            try:
                self.element, self.mode, self.reason = self._find_element(), "html", ""
            except Exception as exc:
                self.reason = f"cannot draw into #{self.element_id}: {describe(exc)}"
        if self.mode == "html":
            self._draw(force=True)
            return
        snap = state.snapshot()
        names = ", ".join(snap.numeric) or "none"
        self._print(f"[start] {snap.epoch_total} epoch(s) from epoch {snap.epoch}; metrics: {names}")

    def on_item(self, split: str) -> None:
        if self.mode == "html":
            self._draw()
            return
        snap = self.state.snapshot()
        fraction = snap.splits[split].progress.fraction
        last = self._last_fraction.get(split, -1.0)
        now = time.monotonic()
        due = (
            last < 0
            or fraction < last  # a new epoch
            or fraction - last >= self.step
            or (fraction >= 1.0 > last)
            or (now - self._last_line >= self.interval and fraction > last)
        )
        if due:
            self._last_fraction[split], self._last_line = fraction, now
            self._print(progress_line(snap, split))

    def on_epoch_end(self, split: str, epoch: int, values: dict[str, float]) -> None:
        self._last_fraction[split] = -1.0
        if self.mode == "html":
            self._draw(force=True)
        else:
            total = self.state.snapshot().epoch_total
            self._print(epoch_line(split, epoch, total, values, self.state.format))

    def on_autotune(self, event: Any) -> None:
        if self.mode == "html":
            self._draw()
            return
        key = (event.kernel, event.key)
        if event.done:  # one line when a kernel starts tuning, one when it ends
            self._announced.discard(key)
        elif key in self._announced:
            return
        else:
            self._announced.add(key)
        self._print(f"[{event.kind}] {event.describe()}")

    def on_status(self, text: str) -> None:
        if self.mode == "html":
            self._draw()
        else:
            self._print(f"[status] {text}")

    def tick(self) -> None:
        if self.mode == "html":
            self._draw()

    def close(self) -> None:
        if self.mode == "html":
            self._draw(force=True)
        else:
            self._print("[end] training finished")

    # ---------------------------------------------------------------- drawing
    def _draw(self, force: bool = False) -> None:
        now = time.monotonic()
        if not force and (now - self._last_draw < self.interval or self.state.version == self._drawn_version):
            return
        snap = self.state.snapshot()
        try:
            self.element.innerHTML = render_html(snap, self.state.format)
        except Exception as exc:  # the element went away: keep training, report on the console
            self.mode, self.reason = "console", f"writing #{self.element_id} failed: {describe(exc)}"
            self._print(f"[status] {self.reason}; continuing with console lines")
            return
        self._drawn_version, self._last_draw = snap.version, now
        self.frames += 1
