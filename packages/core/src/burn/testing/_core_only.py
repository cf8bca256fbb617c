"""A reference-test backend that implements ONLY the required core (by delegating to numpy), so every
default method of ``burn.backend.Backend`` (flip, repeat, tril, one_hot, pad, topk, softmax, var,
stack, clamp, ...) runs in the conformance suite exactly as a third-party backend would get it.

The suite's pytest plugin (``burn.testing._plugin``) registers it from code as backend ``core-only``
when a test asks for the backends under test.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from burn._ndarray import NdArrayBackend
from burn.backend import Backend
from burn.plugins import BackendSpec, hookimpl

_CORE = tuple(Backend.missing_core())  # every @required method name of the contract


def _delegate(name: str) -> Callable[..., Any]:
    def method(self: CoreOnlyBackend, *args: Any, **kwargs: Any) -> Any:
        return getattr(self._numpy, name)(*args, **kwargs)

    method.__name__ = name
    return method


class CoreOnlyBackend(Backend):
    """The required core from numpy; everything else is ``Backend``'s default."""

    name = "core-only"
    dtypes = NdArrayBackend.dtypes
    default_float = NdArrayBackend.default_float
    default_int = NdArrayBackend.default_int

    def __init__(self) -> None:
        self._numpy = NdArrayBackend()


for _name in _CORE:
    setattr(CoreOnlyBackend, _name, _delegate(_name))
assert not CoreOnlyBackend.missing_core(), CoreOnlyBackend.missing_core()


@hookimpl
def burn_register_backends(register: Callable[[BackendSpec], None]) -> None:
    register(
        BackendSpec(
            name="core-only",
            factory=lambda index: CoreOnlyBackend(),
            devices=lambda: ["core-only:0"],
            description="conformance reference: the required core only (Backend defaults for the rest)",
        )
    )
