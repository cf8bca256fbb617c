"""Non-blocking keyboard input for the TUI, only when stdin is a terminal.

``KeyReader.poll()`` returns the keys typed since the last poll without ever waiting (select with a
zero timeout on POSIX, msvcrt on Windows). ``parse_keys`` turns raw input into names: ``"q"``,
``"left"``, ``"right"``, ``"up"``, ``"down"``, ``"escape"``.
"""

from __future__ import annotations

import os
import sys
from typing import IO, Any

_ESCAPES = {"\x1b[A": "up", "\x1b[B": "down", "\x1b[C": "right", "\x1b[D": "left",
            "\x1bOA": "up", "\x1bOB": "down", "\x1bOC": "right", "\x1bOD": "left"}  # fmt: skip
_WINDOWS_ARROWS = {"H": "up", "P": "down", "M": "right", "K": "left"}


def parse_keys(data: str) -> list[str]:
    """Key names in ``data``: escape sequences for arrows, other characters lowercased."""
    keys, i = [], 0
    while i < len(data):
        for seq, name in _ESCAPES.items():
            if data.startswith(seq, i):
                keys.append(name)
                i += len(seq)
                break
        else:
            ch = data[i]
            keys.append("escape" if ch == "\x1b" else ch.lower())
            i += 1
    return keys


class KeyReader:
    """Reads keys from ``stream`` (stdin by default) without blocking; inactive unless it is a TTY."""

    def __init__(self, stream: IO[str] | None = None) -> None:
        self.stream = stream if stream is not None else sys.stdin
        self.active = False
        self._saved: Any = None
        self._fd = -1

    def start(self) -> bool:
        """Put the terminal in cbreak mode; False (and inert) when stdin is not a terminal."""
        try:
            if self.stream is None or not self.stream.isatty():
                return False
            self._fd = self.stream.fileno()
        except (AttributeError, ValueError, OSError):
            return False
        if sys.platform == "win32":  # os.name == "nt"; a check mypy understands
            self.active = True
            return True
        try:
            import termios
            import tty

            self._saved = termios.tcgetattr(self._fd)
            tty.setcbreak(self._fd)
        except Exception:
            return False
        self.active = True
        return True

    def poll(self) -> list[str]:
        """Keys typed since the last call; never waits."""
        if not self.active:
            return []
        if sys.platform == "win32":  # os.name == "nt"; a check mypy understands
            import msvcrt

            chars = []
            while msvcrt.kbhit():
                ch = msvcrt.getwch()
                if ch in ("\x00", "\xe0"):
                    chars.append(_WINDOWS_ARROWS.get(msvcrt.getwch(), ""))
                else:
                    chars.extend(parse_keys(ch))
            return [c for c in chars if c]
        import select

        data = b""
        while select.select([self._fd], [], [], 0)[0]:
            chunk = os.read(self._fd, 64)
            if not chunk:
                break
            data += chunk
        return parse_keys(data.decode("utf-8", "replace")) if data else []

    def close(self) -> None:
        """Give the terminal its settings back."""
        if self.active and self._saved is not None:
            import termios

            termios.tcsetattr(self._fd, termios.TCSADRAIN, self._saved)
        self.active = False
