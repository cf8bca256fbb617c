"""The server: an asyncio WebSocket server whose sessions run op streams on one local burn device.

The event loop only moves frames; each session runs its frames in order on its own worker thread, so a
long op never stalls pings or other sessions. The first frame must be a HELLO carrying the shared token
(compared in constant time); nothing else is read before it. Frames larger than the limit close the
session (the WebSocket layer refuses them). The log names sessions and peers, never tensor data.
"""

from __future__ import annotations

import asyncio
import ipaddress
import itertools
import logging
import queue
import ssl
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from ._errors import ProtocolError, RemoteError
from ._failure import error_frame
from ._frames import Reply
from ._protocol import HELLO, PROTOCOL_VERSION, WELCOME, frame, unframe
from ._session import Limits, Session
from ._validate import token_matches
from ._version import __version__

log = logging.getLogger("burn_remote")
HELLO_TIMEOUT = 10.0  # seconds a new connection has to authenticate


class AuthenticationError(RemoteError):
    """The client's token is wrong or missing."""


@dataclass
class ServerConfig:
    """How ``burn remote serve`` runs: the local device, where it listens, the token, TLS and limits."""

    backend: str = "cpu"
    device_index: int | None = None
    host: str = "127.0.0.1"
    port: int = 3000
    token: str | None = None
    tls_cert: str | None = None
    tls_key: str | None = None
    limits: Limits = field(default_factory=Limits)


def _adapter_label(backend: Any) -> str:
    """The hardware behind the served backend where it says (wgpu's adapter label, CUDA's device name;
    looked for through decorators such as fusion), else ''."""
    seen: set[int] = set()
    while backend is not None and id(backend) not in seen:
        seen.add(id(backend))
        for label in (
            getattr(getattr(backend, "ctx", None), "label", None),
            getattr(backend, "device_name", None),
        ):
            if isinstance(label, str) and label:
                return label
        backend = getattr(backend, "inner", None)
    return ""


def is_loopback(host: str) -> bool:
    """Whether ``host`` only accepts connections from this machine."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check_config(config: ServerConfig) -> None:
    """Refuse what is unsafe or inconsistent: a non-loopback address without a token, half a TLS pair."""
    if not is_loopback(config.host) and not config.token:
        raise ValueError(
            f"--host {config.host}: refusing to listen beyond this machine without a token "
            "(pass --token-file FILE; clients then pass token=... or set BURN_REMOTE_TOKEN)"
        )
    if bool(config.tls_cert) != bool(config.tls_key):
        raise ValueError(
            "--tls-cert and --tls-key: give both (the certificate and its private key) or neither"
        )
    if config.token is not None and not config.token:
        raise ValueError("token: the token file is empty")


class Server:
    """The sessions of one server and the device they share."""

    def __init__(self, config: ServerConfig) -> None:
        import burn

        check_config(config)
        self.config = config
        name = config.backend if config.device_index is None else f"{config.backend}:{config.device_index}"
        self.device = burn.device(name)
        self.backend = self.device.backend
        self.sessions: dict[int, Session] = {}
        self._ids = itertools.count(1)
        self._token = config.token.encode() if config.token else None

    def welcome(self, session_id: int) -> dict[str, Any]:
        b = self.backend
        return {
            "session": session_id,
            "server": __version__,
            "protocol": PROTOCOL_VERSION,
            "device": str(self.device),
            "adapter": _adapter_label(b),  # so a client can say what it trains on ("llvmpipe (...)")
            "backend": b.name,
            "dtypes": sorted(d.name for d in b.dtypes),
            "default_float": b.default_float.name,
            "default_int": b.default_int.name,
            "max_frame": self.config.limits.max_frame,
            "max_session_bytes": self.config.limits.max_session_bytes,
        }

    async def handler(self, ws: Any) -> None:
        peer = _peer(ws)
        try:
            message = await asyncio.wait_for(ws.recv(), HELLO_TIMEOUT)
        except Exception:
            log.info("connection from %s closed before authenticating", peer)
            return
        try:
            _, meta, _ = unframe(message, frozenset({HELLO}))
        except ProtocolError as exc:
            log.warning("connection from %s: bad first frame: %s", peer, exc)
            await _close(ws, error_frame("protocol", exc), 1002, "protocol error")
            return
        if not token_matches(meta, self._token):
            log.warning("connection from %s: authentication failed", peer)
            denied = AuthenticationError("authentication failed: wrong or missing token")
            await _close(ws, error_frame("auth", denied), 1008, "authentication failed")
            return
        if len(self.sessions) >= self.config.limits.max_sessions:
            log.warning("connection from %s refused: %d sessions open", peer, len(self.sessions))
            busy = RemoteError(f"server busy: {len(self.sessions)} sessions open (--max-sessions)")
            await _close(ws, error_frame("limit", busy), 1013, "server busy")
            return
        sid = next(self._ids)
        session = Session(self.backend, self.config.limits)
        self.sessions[sid] = session
        log.info("session %d opened from %s", sid, peer)
        worker = ThreadPoolExecutor(1, thread_name_prefix=f"burn-remote-{sid}")
        try:
            await ws.send(frame(WELCOME, self.welcome(sid)))
            await self._serve(ws, session, worker)
        except Exception as exc:  # a connection error ends this session only
            log.info("session %d: %s: %s", sid, type(exc).__name__, exc)
        finally:
            del self.sessions[sid]
            # frees the tensors after the frames already queued, off the event loop
            worker.submit(session.close)
            worker.shutdown(wait=False)
            log.info("session %d closed (%d ops run)", sid, session.ops_run)

    async def _serve(self, ws: Any, session: Session, worker: ThreadPoolExecutor) -> None:
        loop = asyncio.get_running_loop()
        pipe = _Pipe(loop, session)
        sender = asyncio.create_task(_send_replies(ws, pipe))
        worker.submit(pipe.pump)
        try:
            async for message in ws:
                if sender.done():
                    break
                waiter = pipe.put(message)
                if waiter is not None:  # MAX_QUEUED frames wait for the worker: stop reading
                    await waiter
            pipe.put(None)
            await sender
        finally:
            pipe.closed = True
            pipe.put(None)
            sender.cancel()


MAX_QUEUED = 16  # frames of a session received and not yet handled (each up to --max-frame-mib)
MAX_STREAMED = 3  # DATA frames of a read made and not yet sent
_Item = Reply | BaseException | None


class _Pipe:
    """Frames from the event loop to a session's worker thread, replies back, in order.

    The worker drains a queue of frames and wakes the event loop only for a reply (READ, SYNC, errors)
    or when the loop waits for room: a stream of OPS frames costs no thread hand-off per frame."""

    def __init__(self, loop: asyncio.AbstractEventLoop, session: Session) -> None:
        self.loop = loop
        self.session = session
        self.inbox: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self.replies: asyncio.Queue[_Item] = asyncio.Queue()
        self.lock = threading.Lock()
        self.queued = 0
        self.waiter: asyncio.Future[None] | None = None
        self.done = False
        self.closed = False  # the connection ended: stop streaming a reply
        # streamed frames made and not yet sent: the worker makes the next one while the loop sends
        self.credits = threading.Semaphore(MAX_STREAMED)

    def put(self, message: Any) -> asyncio.Future[None] | None:
        """Queue a frame (None: the end); a future to await when the queue is full."""
        with self.lock:
            if self.done:
                return None
            if message is None:
                self.inbox.put(None)
                return None
            self.queued += 1
            waiter = None
            if self.queued >= MAX_QUEUED:
                waiter = self.waiter = self.loop.create_future()
        self.inbox.put(message)
        return waiter

    def _post(self, callback: Callable[..., Any], *args: Any) -> None:
        try:
            self.loop.call_soon_threadsafe(callback, *args)
        except RuntimeError:  # the event loop is closed (server shutdown)
            pass

    def pump(self) -> None:
        """The worker thread: handle each frame in order until the end or a reply that closes."""
        post, replies = self._post, self.replies
        try:
            while True:
                message = self.inbox.get()
                if message is None:
                    break
                try:
                    reply = self.session.handle(message)
                    if reply.frames or reply.close is not None:
                        post(replies.put_nowait, reply)
                    if reply.stream is not None:
                        self._stream(reply.stream)
                except BaseException as exc:  # a bug, not the client's fault: end this session only
                    post(replies.put_nowait, exc)
                    break
                with self.lock:
                    self.queued -= 1
                    waiter, self.waiter = self.waiter, None
                if waiter is not None:
                    post(_wake, waiter)
                if reply.close is not None:
                    break
        finally:
            with self.lock:
                self.done = True
                waiter, self.waiter = self.waiter, None
            if waiter is not None:
                post(_wake, waiter)
            post(replies.put_nowait, None)

    def _stream(self, frames: Iterator[bytes]) -> None:
        """Send ``frames`` as they are made, at most ``MAX_STREAMED`` held at once."""
        for data in frames:
            while not self.credits.acquire(timeout=0.25):
                if self.closed or self.loop.is_closed():
                    return
            self._post(self.replies.put_nowait, Reply([data], streamed=True))


def _wake(waiter: asyncio.Future[None]) -> None:
    if not waiter.done():
        waiter.set_result(None)


async def _send_replies(ws: Any, pipe: _Pipe) -> None:
    """Send each frame's replies in order; close the session after a protocol error."""
    replies = pipe.replies
    while True:
        reply = await replies.get()
        if reply is None:
            return
        if isinstance(reply, BaseException):
            raise reply
        for data in reply.frames:
            await ws.send(data)
        if reply.streamed:
            pipe.credits.release()
        if reply.close is not None:
            log.warning("closing a session: %s", reply.close)
            await ws.close(1002, reply.close[:120])
            return


async def _close(ws: Any, data: bytes, code: int, reason: str) -> None:
    try:
        await ws.send(data)
        await ws.close(code, reason)
    except Exception:
        pass


def _peer(ws: Any) -> str:
    addr = getattr(ws, "remote_address", None)
    return f"{addr[0]}:{addr[1]}" if isinstance(addr, tuple) and len(addr) >= 2 else str(addr)


def tls_context(cert: str, key: str) -> ssl.SSLContext:
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    ctx.load_cert_chain(cert, key)
    return ctx


async def serve(config: ServerConfig, ready: Callable[[str], None] | None = None) -> None:
    """Serve until cancelled. ``ready(url)`` is called once listening (with the real port for port 0)."""
    from websockets.asyncio.server import serve as ws_serve

    server = Server(config)
    ctx = tls_context(config.tls_cert, config.tls_key) if config.tls_cert and config.tls_key else None
    async with ws_serve(
        server.handler,
        config.host,
        config.port,
        ssl=ctx,
        compression=None,
        max_size=config.limits.max_frame,
        max_queue=16,
        ping_interval=20,
        ping_timeout=20,
        close_timeout=2,
    ) as ws_server:
        port = next(iter(ws_server.sockets)).getsockname()[1]
        host = f"[{config.host}]" if ":" in config.host else config.host
        url = f"{'wss' if ctx else 'ws'}://{host}:{port}"
        log.info(
            "serving %s on %s (token %s, tls %s)",
            server.device,
            url,
            "required" if config.token else "off",
            "on" if ctx else "off",
        )
        if ready is not None:
            ready(url)
        await ws_server.serve_forever()
