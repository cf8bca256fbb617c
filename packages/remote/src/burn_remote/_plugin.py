"""Entry point of burn_remote (group ``burn``): registers the ``remote`` backend and ``burn remote``.

Import-light: websockets, msgpack and numpy load when a device is built or a command runs.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from burn.plugins import BackendSpec, CommandSpec, hookimpl

if TYPE_CHECKING:
    from burn.backend import Backend

URL_ENV = "BURN_REMOTE_URL"


def _available() -> tuple[bool, str]:
    from importlib.util import find_spec

    missing = [name for name in ("websockets", "msgpack") if find_spec(name) is None]
    if missing:
        return False, f"{' and '.join(missing)} not installed (pip install 'burn-core[remote]')"
    return True, ""


def _devices() -> list[str]:
    if not os.environ.get(URL_ENV):
        raise RuntimeError(f"no server configured: set {URL_ENV}, or pass burn.device('remote', url=...)")
    return ["remote:0"]


def _make(index: int, **options: Any) -> Backend:
    from ._backend import connect

    return connect(index, **options)


@hookimpl
def burn_register_backends(register: Callable[[BackendSpec], None]) -> None:
    register(
        BackendSpec(
            name="remote",
            factory=_make,
            is_available=_available,
            devices=_devices,
            options=("url", "token", "timeout", "tls_ca"),
            priority=-10,  # never picked by burn.device("auto")'s preference over a local device
            description="a device on another machine, over WebSocket (burn remote serve)",
        )
    )


@hookimpl
def burn_register_commands(register: Callable[[CommandSpec], None]) -> None:
    register(
        CommandSpec.lazy(
            "remote",
            "burn_remote._cli",
            help="serve this machine's device to remote clients (burn-remote)",
            description="burn-remote: serve a local burn device over WebSocket.",
        )
    )
