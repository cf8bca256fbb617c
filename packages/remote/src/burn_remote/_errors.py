"""The errors of burn-remote."""

from __future__ import annotations

from burn import BurnError


class RemoteError(BurnError, RuntimeError):
    """The remote device cannot serve: connection refused or lost, authentication failed, the server
    closed the session, or an op failed on the server with an error that is not one of burn's own."""


class ProtocolError(RemoteError, ValueError):
    """A frame that breaks the wire format (bad magic, version, length, type or arguments)."""
