"""Fakes of Pyodide's JavaScript side for CPython tests: ``js`` objects, Promises, a DOM document.

JavaScript ``undefined`` is a missing attribute (a JsProxy raises AttributeError), ``null`` is a
``JsNull`` instance (Pyodide's ``jsnull``; only its type name matters).
"""

from __future__ import annotations

import types
from typing import Any


class JsNull:
    """Pyodide's ``jsnull`` (only its type name matters)."""

    def __repr__(self) -> str:
        return "jsnull"


class FakePromise:
    """A Promise settled by hand: ``then`` stores the callbacks, ``resolve``/``reject`` call them."""

    def __init__(self) -> None:
        self.callbacks: list[tuple[Any, Any]] = []

    def then(self, on_ok: Any, on_error: Any = None) -> FakePromise:
        self.callbacks.append((on_ok, on_error))
        return FakePromise()

    def resolve(self, value: Any) -> None:
        for on_ok, _ in self.callbacks:
            on_ok(value)

    def reject(self, error: Any) -> None:
        for _, on_error in self.callbacks:
            on_error(error)


class FakeGpu:
    """``navigator.gpu``: each ``requestAdapter()`` returns a new FakePromise kept in ``requests``."""

    def __init__(self) -> None:
        self.requests: list[FakePromise] = []

    def requestAdapter(self) -> FakePromise:
        promise = FakePromise()
        self.requests.append(promise)
        return promise


class FakePerformance:
    """``performance`` with a clock the test moves (``t`` in ms) and, optionally, ``memory``."""

    def __init__(self) -> None:
        self.t = 1000.0

    def now(self) -> float:
        return self.t


class FakeElement:
    def __init__(self, tag: str = "div") -> None:
        self.tagName = tag.upper()
        self.id = ""
        self.innerHTML = ""
        self.writes = 0

    def __setattr__(self, name: str, value: Any) -> None:
        if name == "innerHTML" and hasattr(self, "writes"):
            object.__setattr__(self, "writes", self.writes + 1)
        object.__setattr__(self, name, value)


class FakeBody:
    def __init__(self) -> None:
        self.children: list[FakeElement] = []

    def appendChild(self, element: FakeElement) -> FakeElement:
        self.children.append(element)
        return element


class FakeDocument:
    def __init__(self, body: bool = True) -> None:
        self.body = FakeBody() if body else None

    def getElementById(self, element_id: str) -> Any:
        children = self.body.children if self.body is not None else []
        return next((e for e in children if e.id == element_id), JsNull())

    def createElement(self, tag: str) -> FakeElement:
        return FakeElement(tag)


def adapter(**overrides: Any) -> types.SimpleNamespace:
    """A GPUAdapter like Chrome's: ``info``, ``features`` (a Set: ``size``), ``limits``."""
    fields = {
        "info": types.SimpleNamespace(
            vendor="nvidia", architecture="hopper", device="", description="H200", isFallbackAdapter=False
        ),
        "features": types.SimpleNamespace(size=4),
        "limits": types.SimpleNamespace(
            maxBufferSize=4_294_967_296,
            maxStorageBufferBindingSize=2_147_483_648,
            maxComputeInvocationsPerWorkgroup=1024,
        ),
    }
    fields.update(overrides)
    return types.SimpleNamespace(**fields)
