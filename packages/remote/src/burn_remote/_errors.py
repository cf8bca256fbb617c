"""The errors of burn-remote."""

from __future__ import annotations

from burn import BackendUnavailableError, BurnError


class RemoteError(BurnError, RuntimeError):
    """The remote device cannot serve: connection refused or lost, authentication failed, the server
    closed the session, or an op failed on the server with an error that is not one of burn's own."""


class ProtocolError(RemoteError, ValueError):
    """A frame that breaks the wire format (bad magic, version, length, type or arguments)."""


class RemoteUnavailableError(RemoteError, BackendUnavailableError):
    """No session to be had: the server cannot be reached or refused the token. Also a
    ``burn.BackendUnavailableError``, so a command reports it as an unavailable device (one line,
    exit 2) rather than a crash."""
