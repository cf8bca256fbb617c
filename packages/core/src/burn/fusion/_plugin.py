"""burn-core's own plugin registering the ``fusion`` backend decorator (entry point ``fusion``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..plugins import DecoratorSpec, hookimpl

if TYPE_CHECKING:
    from .._device import Device
    from ..backend import Backend


def _make(inner: Backend, device: Device, **options: Any) -> Backend:
    from ._backend import Fusion

    return Fusion(inner, device=device)


@hookimpl
def burn_register_decorators(register: Callable[[DecoratorSpec], None]) -> None:
    register(
        DecoratorSpec(
            name="fusion",
            factory=_make,
            description="defers element-wise ops and runs their chains as generated kernels (burn-fusion)",
        )
    )
