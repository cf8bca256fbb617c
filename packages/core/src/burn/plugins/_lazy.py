"""``lazy_attributes``: a package's public names loaded from its modules on first use (PEP 562)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from importlib import import_module
from typing import Any


def lazy_attributes(
    package: str, table: Mapping[str, str], namespace: dict[str, Any]
) -> Callable[[str], Any]:
    """A module ``__getattr__`` for ``package``: ``table`` maps a public name to the module (relative,
    ``"._engine"``) that defines it, imported on the first access and cached in ``namespace`` (the
    package's ``globals()``), so ``import package`` stays light. Other names raise AttributeError.

    >>> from burn.plugins import lazy_attributes
    >>> getattr_ = lazy_attributes("json", {"JSONDecoder": ".decoder"}, {})
    >>> getattr_("JSONDecoder").__name__
    'JSONDecoder'
    """

    def __getattr__(name: str) -> Any:
        module = table.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(import_module(module, package), name)
        namespace[name] = value
        return value

    return __getattr__
