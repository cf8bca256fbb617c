"""``burn remote serve ...``: the command line of burn-remote (registered through
``burn_register_commands``). Import-light: the server loads when the command runs."""

from __future__ import annotations

import argparse
import sys

from ._protocol import DEFAULT_PORT


def configure(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="remote_command", metavar="SUBCOMMAND", required=True)
    serve = sub.add_parser(
        "serve",
        help="serve a local device to clients of burn.device('remote', url=...)",
        description="Serve a local burn device over WebSocket. Listens on 127.0.0.1 unless --host says "
        "otherwise, and refuses a non-loopback address without --token-file. Prints the URL once ready.",
    )
    serve.add_argument("--backend", default="cpu", help="local backend: cpu, wgpu or cuda (default cpu)")
    serve.add_argument("--device", type=int, default=None, metavar="N", help="device index (default 0)")
    serve.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    serve.add_argument(
        "--port", type=int, default=DEFAULT_PORT, help=f"port (default {DEFAULT_PORT}; 0: any free)"
    )
    serve.add_argument("--token-file", metavar="FILE", help="file holding the shared token clients must send")
    serve.add_argument("--tls-cert", metavar="C", help="TLS certificate (PEM): serve wss://")
    serve.add_argument("--tls-key", metavar="K", help="TLS private key (PEM) of --tls-cert")
    serve.add_argument("--max-frame-mib", type=float, default=64, help="largest frame accepted (default 64)")
    serve.add_argument(
        "--max-session-mib", type=float, default=4096, help="tensor memory per session (default 4096)"
    )
    serve.add_argument("--max-sessions", type=int, default=32, help="sessions open at once (default 32)")
    serve.add_argument("-v", "--verbose", action="store_true", help="log every session event")


def run(args: argparse.Namespace) -> int:
    import asyncio
    import logging

    from ._server import ServerConfig, check_config, serve
    from ._session import Limits

    logging.basicConfig(
        level=logging.INFO if args.verbose else logging.WARNING,
        format="%(asctime)s burn-remote %(levelname)s %(message)s",
        stream=sys.stderr,
    )
    logging.getLogger("burn_remote").setLevel(logging.INFO)  # sessions are always logged
    token = None
    if args.token_file:
        try:
            with open(args.token_file, encoding="utf-8") as f:
                token = f.read().strip()
        except OSError as exc:
            print(f"burn remote serve: --token-file: {exc}", file=sys.stderr)
            return 2
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
        print(f"burn remote serve: {exc}", file=sys.stderr)
        return 2

    def ready(url: str) -> None:
        print(f"burn remote: serving {args.backend} on {url}", flush=True)

    try:
        asyncio.run(serve(config, ready))
    except KeyboardInterrupt:
        pass
    except OSError as exc:
        print(f"burn remote serve: cannot listen on {args.host}:{args.port}: {exc}", file=sys.stderr)
        return 1
    return 0
