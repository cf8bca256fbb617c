"""``burn remote serve ...``: the command line of burn-remote (registered through
``burn_register_commands``). Import-light: the server loads when the command runs."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from burn.plugins import int_at_least, int_between, positive_float

from ._protocol import DEFAULT_PORT

if TYPE_CHECKING:
    from ._server import ServerConfig


def configure(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="remote_command", metavar="SUBCOMMAND", required=True)
    serve = sub.add_parser(
        "serve",
        help="serve a local device to clients of burn.device('remote', url=...)",
        description="Serve a local burn device over WebSocket. Listens on 127.0.0.1 unless --host says "
        "otherwise, and refuses a non-loopback address without --token-file. Prints the URL once ready.",
    )
    serve.add_argument("--backend", default="cpu", help="local backend: cpu, wgpu or cuda (default cpu)")
    serve.add_argument(
        "--device",
        type=int_at_least(0, "a device index"),
        default=None,
        metavar="N",
        help="device index (default 0)",
    )
    serve.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    serve.add_argument(
        "--port",
        type=int_between(0, 65535, "a port number", " (0: any free port)"),
        default=DEFAULT_PORT,
        help=f"port (default {DEFAULT_PORT}; 0: any free)",
    )
    serve.add_argument("--token-file", metavar="FILE", help="file holding the shared token clients must send")
    serve.add_argument("--tls-cert", metavar="C", help="TLS certificate (PEM): serve wss://")
    serve.add_argument("--tls-key", metavar="K", help="TLS private key (PEM) of --tls-cert")
    serve.add_argument(
        "--max-frame-mib",
        type=positive_float("number of MiB"),
        default=64,
        help="largest frame accepted (default 64)",
    )
    serve.add_argument(
        "--max-session-mib",
        type=positive_float("number of MiB"),
        default=4096,
        help="tensor memory per session (default 4096)",
    )
    serve.add_argument(
        "--max-sessions",
        type=int_at_least(1, "a whole number"),
        default=32,
        help="sessions open at once (default 32)",
    )
    serve.add_argument("-v", "--verbose", action="store_true", help="log every session event")


def _read_token(path: str) -> str:
    """The shared token in ``--token-file``: its text, stripped; every way it cannot be one is named."""
    from burn.plugins import CommandError

    try:
        with open(path, "rb") as f:
            data = f.read()
    except FileNotFoundError:
        raise CommandError(f"--token-file {path}: no such file") from None
    except IsADirectoryError:
        raise CommandError(f"--token-file {path}: is a folder, expected a file holding the token") from None
    except OSError as exc:
        raise CommandError(f"--token-file {path}: cannot read it: {exc.strerror or exc}") from None
    try:
        token = data.decode("utf-8").strip()
    except UnicodeDecodeError:
        raise CommandError(
            f"--token-file {path}: not UTF-8 text, expected a file holding the token"
        ) from None
    if not token:
        raise CommandError(f"--token-file {path}: the file is empty, expected the token")
    return token


def _check_tls(cert: str | None, key: str | None) -> None:
    """Load the certificate and key now, so a missing or malformed one is a usage error naming the file."""
    import ssl

    from burn.plugins import CommandError

    from ._server import tls_context

    if not cert or not key:
        return  # check_config names a half pair
    for flag, path in (("--tls-cert", cert), ("--tls-key", key)):
        try:
            with open(path, "rb"):
                pass
        except FileNotFoundError:
            raise CommandError(f"{flag} {path}: no such file") from None
        except OSError as exc:
            raise CommandError(f"{flag} {path}: cannot read it: {exc.strerror or exc}") from None
    try:
        tls_context(cert, key)
    except (ssl.SSLError, OSError, ValueError) as exc:
        raise CommandError(
            f"--tls-cert {cert} / --tls-key {key}: not a PEM certificate and its private key ({exc})"
        ) from None


def _listen_error(config: ServerConfig, exc: OSError) -> str:
    import errno
    import socket

    where = f"--host {config.host} --port {config.port}"
    if exc.errno == errno.EADDRINUSE:
        return f"{where}: the address is already in use (another server? pick another --port, or 0)"
    if exc.errno == errno.EADDRNOTAVAIL:
        return f"{where}: not an address of this machine"
    if exc.errno in (errno.EACCES, errno.EPERM):
        return f"{where}: not permitted (ports below 1024 need privileges)"
    if isinstance(exc, socket.gaierror):
        return f"--host {config.host}: cannot resolve it ({exc.strerror or exc})"
    return f"{where}: cannot listen: {exc.strerror or exc}"


def run(args: argparse.Namespace) -> int:
    from importlib.util import find_spec

    from burn.plugins import CommandError

    missing = [name for name in ("websockets", "msgpack") if find_spec(name) is None]
    if missing:
        raise CommandError(f"needs {' and '.join(missing)}: pip install 'burn-core[remote]'")

    import asyncio
    import logging

    from burn import DeviceError

    from ._server import ServerConfig, check_config, serve
    from ._session import Limits

    token = _read_token(args.token_file) if args.token_file else None
    mib = 1 << 20
    config = ServerConfig(
        backend=args.backend,
        device_index=args.device,
        host=args.host,
        port=args.port,
        token=token,
        tls_cert=args.tls_cert,
        tls_key=args.tls_key,
        limits=Limits(int(args.max_frame_mib * mib), int(args.max_session_mib * mib), args.max_sessions),
    )
    try:
        check_config(config)
    except ValueError as exc:
        raise CommandError(str(exc)) from None
    _check_tls(args.tls_cert, args.tls_key)
    logging.basicConfig(
        level=logging.INFO if args.verbose else logging.WARNING,
        format="%(asctime)s burn-remote %(levelname)s %(message)s",
        stream=sys.stderr,
    )
    logging.getLogger("burn_remote").setLevel(logging.INFO)  # sessions are always logged
    started = False

    def ready(url: str) -> None:
        nonlocal started
        started = True
        print(f"burn remote: serving {args.backend} on {url}", flush=True)

    device = args.backend if args.device is None else f"{args.backend} --device {args.device}"
    try:
        asyncio.run(serve(config, ready))
    except KeyboardInterrupt:
        pass
    except DeviceError as exc:  # before listening: the local device cannot be opened
        if started:
            raise
        raise CommandError(f"--backend {device}: {exc}") from None
    except OSError as exc:
        if not started:  # binding failed: the address is the user's to fix
            raise CommandError(_listen_error(config, exc)) from None
        print(f"burn remote serve: stopped serving on {args.host}:{args.port}: {exc}", file=sys.stderr)
        return 1
    return 0
