"""Where the browser is: Pyodide's ``js`` module (JavaScript's ``globalThis``) and ``pyodide_js``.

Every collector reads JavaScript through an ``Env`` built here, at run time, so the same installed
package answers "unavailable, with the reason" on CPython and works under Pyodide. Tests hand an
``Env`` holding fake ``js`` objects, or put fakes in ``sys.modules`` and patch ``sys.platform``.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Any

PYODIDE_PLATFORM = "emscripten"


class SourceUnavailable(RuntimeError):
    """A browser source cannot be read here (the API is missing, or reading it failed)."""


@dataclass(frozen=True)
class Env:
    """The JavaScript side: ``js`` (globalThis) and, where present, ``pyodide_js`` (the runtime)."""

    js: Any
    pyodide_js: Any = None


def platform_reason() -> str:
    """``""`` under Pyodide, else why browser metrics cannot run on this interpreter."""
    if sys.platform == PYODIDE_PLATFORM:
        return ""
    return (
        "browser metrics need Pyodide (sys.platform == 'emscripten', in a browser or Node); "
        f"this interpreter runs on {sys.platform!r}"
    )


def current_env() -> Env:
    """The ``Env`` of this interpreter; ``SourceUnavailable`` outside Pyodide or without ``js``."""
    reason = platform_reason()
    if reason:
        raise SourceUnavailable(reason)
    try:
        import js
    except ImportError as exc:
        raise SourceUnavailable(f"Pyodide's 'js' module cannot be imported: {exc}") from exc
    try:
        import pyodide_js
    except ImportError:  # only the wasm heap source needs it
        pyodide_js = None
    return Env(js, pyodide_js)


def is_missing(value: Any) -> bool:
    """True for JavaScript ``undefined`` (None in Python) and ``null`` (Pyodide's ``jsnull``)."""
    return value is None or type(value).__name__ == "JsNull"


def lookup(root: Any, path: str) -> Any:
    """``root.a.b.c`` for ``path="a.b.c"``; ``SourceUnavailable`` naming the first missing part."""
    value = root
    walked = []
    for part in path.split("."):
        walked.append(part)
        try:
            value = getattr(value, part)
        except Exception:  # a JsProxy raises AttributeError; a throwing getter raises anything
            value = None
        if is_missing(value):
            raise SourceUnavailable(f"{'.'.join(walked)} is not available here")
    return value


def number(value: Any, what: str) -> float:
    """``value`` as a finite-or-not float; ``SourceUnavailable`` when JavaScript gave a non-number."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise SourceUnavailable(f"{what} is not a number (got {type(value).__name__})")
    return float(value)


def describe(exc: BaseException) -> str:
    """A one-line reason from an exception (its message for ``SourceUnavailable``)."""
    if isinstance(exc, SourceUnavailable):
        return str(exc)
    return f"{type(exc).__name__}: {exc}"
