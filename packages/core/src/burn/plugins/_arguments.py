"""Command-line argument helpers shared by every ``burn`` command and example script.

``int_at_least``, ``int_between`` and ``positive_float`` build argparse ``type=`` callables whose errors
say what was expected and what was typed (``argument --port: expected a port number 0-65535 (0: any
free port), got 'abc'``). ``OneLineParser`` prints such a usage error as one line and exits 2: the
usage block is what ``--help`` is for. This module imports argparse, so ``burn.plugins`` loads it lazily.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable
from typing import NoReturn

USAGE_ERROR = 2  # exit status of a usage error (argparse's own)


class OneLineParser(argparse.ArgumentParser):
    """An ``argparse.ArgumentParser`` whose usage errors are one line, ``PROG: error: MESSAGE (see PROG
    --help)``, and exit status 2. Subparsers made with ``add_subparsers`` are of the same class.

    >>> from burn.plugins import OneLineParser, int_at_least
    >>> parser = OneLineParser(prog="demo")
    >>> parser.add_argument("--epochs", type=int_at_least(1)).dest
    'epochs'
    >>> parser.parse_args(["--epochs", "3"]).epochs
    3
    """

    def error(self, message: str) -> NoReturn:
        self.exit(USAGE_ERROR, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def _shown(text: str, parsed: bool) -> str:
    """The typed value in a message: as typed when it is a number, quoted when it is not."""
    return text if parsed else repr(text)


def int_at_least(low: int, what: str = "an integer", note: str = "") -> Callable[[str], int]:
    """An argparse ``type=`` for integers ``>= low``; ``what`` names the value and ``note`` follows the
    bound in the error (``expected an integer >= 1 (omit --resume to start over), got 0``).

    >>> from burn.plugins import int_at_least
    >>> ranks = int_at_least(1, "a number of ranks")
    >>> ranks("4")
    4
    >>> ranks("0")
    Traceback (most recent call last):
      ...
    argparse.ArgumentTypeError: expected a number of ranks >= 1, got 0
    """

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            value = None
        if value is None or value < low:
            raise argparse.ArgumentTypeError(
                f"expected {what} >= {low}{note}, got {_shown(text, value is not None)}"
            )
        return value

    return parse


def int_between(low: int, high: int, what: str = "an integer", note: str = "") -> Callable[[str], int]:
    """An argparse ``type=`` for integers from ``low`` to ``high`` inclusive (errors as ``int_at_least``).

    >>> from burn.plugins import int_between
    >>> port = int_between(0, 65535, "a port number", " (0: any free port)")
    >>> port("8080")
    8080
    >>> port("http")
    Traceback (most recent call last):
      ...
    argparse.ArgumentTypeError: expected a port number 0-65535 (0: any free port), got 'http'
    """

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            value = None
        if value is None or not low <= value <= high:
            raise argparse.ArgumentTypeError(
                f"expected {what} {low}-{high}{note}, got {_shown(text, value is not None)}"
            )
        return value

    return parse


def positive_float(what: str = "number") -> Callable[[str], float]:
    """An argparse ``type=`` for finite numbers ``> 0``; ``what`` names them (``number of seconds``).

    >>> from burn.plugins import positive_float
    >>> seconds = positive_float("number of seconds")
    >>> seconds("2.5")
    2.5
    >>> seconds("-1")
    Traceback (most recent call last):
      ...
    argparse.ArgumentTypeError: expected a finite number of seconds > 0, got -1
    """

    def parse(text: str) -> float:
        try:
            value, parsed = float(text), True
        except ValueError:
            value, parsed = math.nan, False
        if not 0 < value < math.inf:
            raise argparse.ArgumentTypeError(f"expected a finite {what} > 0, got {_shown(text, parsed)}")
        return value

    return parse
