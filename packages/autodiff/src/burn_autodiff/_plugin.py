"""Entry point of burn_autodiff (group ``burn``): registers the ``autodiff`` backend decorator.

Import-light: the decorator class and its rule tables load when the first autodiff device is built.
"""

from __future__ import annotations

from typing import Any

from burn.plugins import DecoratorSpec, hookimpl


def _make(inner: Any, device: Any, **options: Any) -> Any:
    from ._backend import Autodiff

    return Autodiff(inner, device=device, **options)


@hookimpl
def burn_register_decorators(register):
    register(
        DecoratorSpec(
            name="autodiff",
            factory=_make,
            options=("checkpointing",),
            description="reverse-mode gradients over any backend (Burn's Autodiff<B>)",
        )
    )
