"""The "auto" renderer: the dashboard on a terminal with rich, plain lines otherwise, and a one-time notice
when a terminal gets plain lines only because rich is missing."""

from __future__ import annotations

import pytest
from burn_train.renderer import _select
from burn_train.renderer._cli import CliRenderer


@pytest.fixture
def terminal(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    monkeypatch.setattr(_select, "_stdout_is_terminal", lambda: True)
    monkeypatch.setattr(_select, "_noticed", [])
    return monkeypatch


def _without_rich(monkeypatch: pytest.MonkeyPatch) -> None:
    real = _select.find_spec
    monkeypatch.setattr(_select, "find_spec", lambda name, *a: None if name == "rich" else real(name, *a))


def test_terminal_without_rich_says_why_once(terminal, capsys):
    _without_rich(terminal)
    assert isinstance(_select.make_renderer("auto"), CliRenderer)
    assert isinstance(_select.make_renderer("auto"), CliRenderer)
    captured = capsys.readouterr()
    assert captured.err == _select.NO_RICH_NOTICE + "\n"  # once, on stderr, one line
    assert "pip install 'burn-train[tui]'" in captured.err and captured.out == ""


def test_terminal_with_rich_gets_the_dashboard(terminal, capsys):
    pytest.importorskip("rich")
    assert _select._auto() == "tui"
    assert capsys.readouterr().err == ""


def test_piped_output_gets_plain_lines_without_a_notice(terminal, capsys):
    _without_rich(terminal)
    terminal.setattr(_select, "_stdout_is_terminal", lambda: False)
    assert _select._auto() == "cli"
    assert capsys.readouterr().err == ""
