"""The ``web`` renderer: HTML into a (fake) DOM element, console lines elsewhere; and its formatting."""

from __future__ import annotations

import io
import re

import pytest
from burn.autotune import AutotuneEvent
from burn_metrics_web import WebRenderer
from burn_metrics_web._format import bar, fmt_duration, render_html
from burn_train import Progress
from burn_train.metric import MetricEntry
from burn_train.renderer import Snapshot, SplitView, make_renderer

from ._fakes import FakeDocument, FakeElement
from ._stream import MeanLoss, run_stream


def test_bar_and_durations() -> None:
    assert bar(0.5, 10) == "#####-----"
    assert bar(1.7, 4) == "####" and bar(-0.2, 4) == "----"
    assert fmt_duration(None) == "--:--" and fmt_duration(float("nan")) == "--:--"
    assert fmt_duration(65) == "1:05" and fmt_duration(3725) == "1:02:05"


def test_registered_and_validated() -> None:
    renderer = make_renderer("web", console=True, stream=io.StringIO())
    assert isinstance(renderer, WebRenderer) and renderer.mode == "console"
    with pytest.raises(ValueError, match="element_id must be a non-empty string"):
        WebRenderer(element_id="")
    with pytest.raises(ValueError, match="need interval >= 0 and 0 < step <= 1"):
        WebRenderer(step=0)


def test_html_into_a_created_element() -> None:
    document = FakeDocument()
    renderer = WebRenderer(document=document, interval=0.0)
    run_stream([MeanLoss()], [MeanLoss()], renderer, status="saved <checkpoint> & done")
    (element,) = document.body.children
    assert (element.tagName, element.id, renderer.mode) == ("DIV", "burn-dashboard", "html")
    html = element.innerHTML
    assert html.startswith('<div class="burn-dashboard" data-mode="done">')
    assert (
        '<tr data-split="train"><td>train</td><td>2/2</td><td><progress max="32" value="32"></progress></td>'
        in html
    )
    assert '<tr data-metric="Loss"><td>Loss</td>' in html
    # epoch values: train epoch 2 had losses 1/2, 1/3, 1/4, 1/5 with equal weights
    mean = (1 / 2 + 1 / 3 + 1 / 4 + 1 / 5) / 4
    assert f'<tr data-epoch="2" data-split="train"><td>2</td><td>train</td><td>{mean:.4g}</td></tr>' in html
    assert "<li>saved &lt;checkpoint&gt; &amp; done</li>" in html
    # a frame per event when interval is 0 (start, 12 items, 4 epoch ends, status, end, close)
    assert renderer.frames == element.writes >= 18


def test_html_redraws_are_rate_limited_but_epoch_ends_always_draw() -> None:
    document = FakeDocument()
    existing = FakeElement()
    existing.id = "board"
    document.body.appendChild(existing)
    renderer = WebRenderer(element_id="board", document=document, interval=3600.0)
    run_stream([MeanLoss()], [MeanLoss()], renderer)
    assert document.body.children == [existing]  # found, not created again
    assert existing.writes == 1 + 4 + 1  # start, each epoch end (2 splits x 2 epochs), close


def test_without_body_or_when_writing_fails_it_prints_lines() -> None:
    out = io.StringIO()
    renderer = WebRenderer(document=FakeDocument(body=False), stream=out)
    run_stream([MeanLoss()], [MeanLoss()], renderer, epochs=1)
    assert renderer.mode == "console"
    assert (
        renderer.reason
        == "cannot draw into #burn-dashboard: LookupError: no element #burn-dashboard and no <body> to add it to"
    )
    assert out.getvalue().splitlines()[0] == "[start] 1 epoch(s) from epoch 1; metrics: Loss"

    class Detached(FakeElement):
        def __setattr__(self, name, value):
            if name == "innerHTML" and getattr(self, "id", "") == "burn-dashboard":
                raise RuntimeError("element detached")
            super().__setattr__(name, value)

    document = FakeDocument()
    document.createElement = lambda tag: Detached(tag)
    out = io.StringIO()
    renderer = WebRenderer(document=document, stream=out)
    run_stream([MeanLoss()], [MeanLoss()], renderer, epochs=1)
    lines = out.getvalue().splitlines()
    assert renderer.mode == "console"
    assert (
        lines[0]
        == "[status] writing #burn-dashboard failed: RuntimeError: element detached; continuing with console lines"
    )
    assert lines[-1] == "[end] training finished"


def test_console_lines() -> None:
    out = io.StringIO()
    renderer = WebRenderer(console=True, stream=out, interval=3600.0, step=0.5)
    hub = run_stream([MeanLoss()], [MeanLoss()], renderer, epochs=1, batches={"train": 8, "valid": 2})
    renderer.on_autotune(AutotuneEvent("matmul", step=1, total=3))
    renderer.on_autotune(AutotuneEvent("matmul", step=2, total=3))  # already announced: no line
    renderer.on_autotune(AutotuneEvent("matmul", step=3, total=3, done=True, best="tiled"))
    lines = out.getvalue().splitlines()
    assert renderer.reason == "forced by console=True"
    train = [line for line in lines if line.startswith("[train] 1/1")]
    # the first item, then every half epoch: 1/8, 5/8 (+0.5), 8/8 (the end)
    assert [re.search(r" (\d+/64) it ", line).group(1) for line in train] == ["8/64", "40/64", "64/64"]
    assert train[0].startswith(
        "[train] 1/1 [###-----------------]  12.5% 8/64 it 1 | Loss 1 (epoch 1) | eta "
    )
    loss = hub.store.value("train", "Loss", 1)
    assert f"[train] epoch 1/1 done | Loss {loss:.4g}" in lines
    assert lines[-2:] == [
        "[autotune] autotuning matmul 1/3",
        "[autotune] autotuning matmul done (best: tiled)",
    ]


def test_page_document_is_found_under_pyodide(browser) -> None:
    browser.js.document = FakeDocument()
    renderer = make_renderer("web", interval=0.0)
    run_stream([MeanLoss()], [], renderer, epochs=1, batches={"train": 2})
    assert renderer.mode == "html" and browser.js.document.body.children[0].writes == renderer.frames > 0


def test_no_document_in_a_worker(browser) -> None:
    out = io.StringIO()
    renderer = make_renderer("web", stream=out)  # browser.js has no document: a web worker, or Node
    run_stream([MeanLoss()], [], renderer, epochs=1, batches={"train": 2})
    assert renderer.mode == "console" and renderer.reason == "no DOM document here"


def test_html_escapes_user_text() -> None:
    entry = MetricEntry(name="<b>", value=1.0, epoch_value=1.0, formatted="1 & 2")
    view = SplitView(Progress(2, 4), epoch=1, iteration=3, started_at=0.0, entries={"<b>": entry})
    snap = Snapshot(
        now=5.0,  # 2 of 4 items in 5 s: 5 s left
        elapsed=1.0,
        mode="train<",
        epoch=1,
        epoch_total=2,
        splits={"train": view, "valid": SplitView()},
        numeric=("<b>",),
        history={},
        epochs={"<b>": {"train": ((1, 0.5),)}},
        autotune_active=(),
        autotune_recent=(),
        autotune_count=0,
        status=("a<b",),
        version=0,
    )
    html = render_html(snap, lambda name, value: f"{value}<")
    assert "<b>" not in html.replace('<div class="burn-dashboard"', "")
    for part in (
        'data-mode="train&lt;"',
        '<tr data-metric="&lt;b&gt;"><td>&lt;b&gt;</td><td>1 &amp; 2</td></tr>',
        "<td>0.5&lt;</td>",
        "<li>a&lt;b</li>",
        "<td>0:05</td>",
    ):
        assert part in html


def test_auto_picks_the_web_renderer_in_a_browser(browser, monkeypatch) -> None:
    browser.js.document = FakeDocument()
    assert isinstance(make_renderer("auto", interval=0.0), WebRenderer)
    monkeypatch.setattr("sys.platform", "linux")
    assert not isinstance(make_renderer("auto"), WebRenderer)
