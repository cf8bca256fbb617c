"""Entry point of burn_autodiff (group ``burn``): registers the ``autodiff`` backend decorator.

Import-light: the decorator class and its rule tables load when the first autodiff device is built.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from burn.plugins import DecoratorSpec, hookimpl

if TYPE_CHECKING:
    from burn import Device
    from burn.backend import Backend

    from ._backend import Autodiff


def _make(inner: Backend, device: Device, **options: Any) -> Autodiff:
    from ._backend import Autodiff

    return Autodiff(inner, device=device, **options)


@hookimpl
def burn_register_decorators(register: Callable[[DecoratorSpec], None]) -> None:
    register(
        DecoratorSpec(
            name="autodiff",
            factory=_make,
            options=("checkpointing",),
            description="reverse-mode gradients over any backend (Burn's Autodiff<B>)",
        )
    )
