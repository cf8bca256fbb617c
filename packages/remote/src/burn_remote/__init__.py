"""burn-remote: a burn device on another machine.

On the machine with the device::

    $ burn remote serve --backend cuda --port 3000 --token-file token.txt

Anywhere else (everything in burn's API works on it, autodiff included)::

    >>> dev = burn.device("remote", url="ws://gpu-box:3000", token=TOKEN)  # doctest: +SKIP
    >>> (burn.ones((2, 2), device=dev) * 3).tolist()  # doctest: +SKIP
    [[3.0, 3.0], [3.0, 3.0]]

Ops stream to the server without waiting; reads wait (a ``Transaction`` is one round trip). The token
also comes from ``BURN_REMOTE_TOKEN`` and the URL from ``BURN_REMOTE_URL``. A lost server makes the next
op raise ``RemoteError``; ``reconnect(device)`` opens a new session.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ._errors import ProtocolError, RemoteError, RemoteUnavailableError
from ._version import __version__

if TYPE_CHECKING:
    from burn import Device

    from ._backend import RemoteBackend


def remote_backend(device: Device) -> RemoteBackend:
    """The ``RemoteBackend`` serving ``device`` (through any decorators such as autodiff)."""
    from ._backend import RemoteBackend

    b: Any = device.backend
    while not isinstance(b, RemoteBackend):
        inner = getattr(b, "inner", None)
        if inner is None:
            raise ValueError(f"remote_backend: device {device} is not a remote device")
        b = inner
    return b


def reconnect(device: Device) -> Device:
    """Open a new session for ``device`` after its server restarted (or the connection was lost);
    tensors made before stay unusable. Returns ``device``, ready for new tensors."""
    remote_backend(device).reconnect()
    return device


def serve(
    backend: str = "cpu",
    host: str = "127.0.0.1",
    port: int = 3000,
    token: str | None = None,
    **kwargs: Any,
) -> None:
    """Run a server in this thread until interrupted (``burn remote serve`` from Python)."""
    import asyncio

    from ._server import ServerConfig
    from ._server import serve as _serve

    asyncio.run(_serve(ServerConfig(backend=backend, host=host, port=port, token=token, **kwargs)))


__all__ = [
    "ProtocolError",
    "RemoteError",
    "RemoteUnavailableError",
    "__version__",
    "reconnect",
    "remote_backend",
    "serve",
]
