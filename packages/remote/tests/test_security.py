"""Security of the server: the token (wrong, missing; constant-time compare), hostile frames sent with a
raw WebSocket (malformed, oversized, naming another session's tensors, lying about shapes), per-session
memory limits, and the refusal to listen beyond loopback without a token. After each, the server still
serves other clients."""

from __future__ import annotations

import inspect
import struct
import subprocess
import sys
import time

import burn
import msgpack
import numpy as np
import pytest
from burn_remote import RemoteError
from burn_remote._protocol import (
    DONE,
    ERROR,
    HELLO,
    OPS,
    PROTOCOL_VERSION,
    READ,
    SERVER_FRAMES,
    SYNC,
    UPLOAD,
    WELCOME,
    frame,
    unframe,
)
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import connect


def _raw(url, token=None, hello=True):
    extra = {"legacy": True} if "legacy" in inspect.signature(connect).parameters else {}
    ws = connect(url, compression=None, proxy=None, open_timeout=10, max_size=None, **extra)
    if hello:
        ws.send(frame(HELLO, {"token": token}))
        kind, _, _ = unframe(ws.recv(timeout=10), SERVER_FRAMES)
        assert kind == WELCOME
    return ws


def _reply(ws):
    kind, meta, _ = unframe(ws.recv(timeout=10), SERVER_FRAMES)
    return kind, meta


def _closed_with(ws, code):
    """The session sent an ERROR frame (when it could) and closed with ``code``."""
    try:
        while True:
            ws.recv(timeout=10)
    except ConnectionClosed as exc:
        assert exc.rcvd is not None and exc.rcvd.code == code, exc
        return
    raise AssertionError("the session stayed open")


def _still_serves(server):
    dev = burn.device(f"remote:{time.monotonic_ns()}", url=server.url, token=server.token)
    assert (burn.tensor([1.0, 2.0], device=dev) * 3).tolist() == [3.0, 6.0]
    from burn_remote import remote_backend

    remote_backend(dev).close()


def test_wrong_and_missing_token_are_clear_errors_within_10s(server):
    for i, token in enumerate(["not-the-token", None, server.token[:-1]]):
        start = time.monotonic()
        with pytest.raises(RemoteError, match="authentication failed: wrong or missing token"):
            _ = burn.device(f"remote:{200 + i}", url=server.url, token=token).backend
        assert time.monotonic() - start < 10
    assert server.wait_log("authentication failed")
    _still_serves(server)


def test_nothing_is_read_before_the_token(server):
    ws = _raw(server.url, hello=False)
    ws.send(frame(OPS, ((("full", ((2,), 1.0, {"d": "float32"}), ((0, (2,), "float32"),)),), ())))
    kind, meta = _reply(ws)
    assert kind == ERROR and meta["kind"] == "protocol"
    _closed_with(ws, 1002)
    ws = _raw(server.url, hello=False)
    ws.send(frame(HELLO, {"token": "wrong"}))
    kind, meta = _reply(ws)
    assert kind == ERROR and meta["kind"] == "auth"
    _closed_with(ws, 1008)


_V = bytes([PROTOCOL_VERSION])
MALFORMED = {
    "short": b"BR" + _V,
    "bad_magic": b"XX" + frame(SYNC, None)[2:],
    "bad_version": b"BR\x09" + frame(SYNC, None)[3:],
    "unknown_type": b"BR" + _V + b"\x63" + frame(SYNC, None)[4:],
    "meta_past_end": b"BR" + _V + bytes([SYNC]) + struct.pack("<I", 1000) + b"\x90",
    "garbage_meta": b"BR" + _V + bytes([SYNC]) + struct.pack("<I", 3) + b"\xc1\xc1\xc1",
    "ops_not_a_list": frame(OPS, 42),
    "record_not_a_list": frame(OPS, ((7,), ())),
    "drops_not_ids": frame(OPS, ((), ("x",))),
    "read_not_ids": frame(READ, 5),
    "upload_garbage": frame(UPLOAD, (1, 2)),
    "upload_bad_offset": frame(UPLOAD, (9, "float32", "<f4", (4,), 16, 8), b"\0" * 8),
    "second_hello": frame(HELLO, {"token": None}),
    "unknown_dtype_arg": frame(OPS, ((("full", ((2,), 0.0, {"d": "float7"}), ((0, (2,), "float32"),)),), ())),
    "array_size_lie": frame(
        OPS, ((("from_numpy", ({"a": ("<f4", (1000,), b"1234")}, {"d": "float32"}), ()),), ())
    ),
}


@pytest.mark.parametrize("case", list(MALFORMED))
def test_malformed_frame_closes_only_that_session(server, case):
    bystander = burn.device(f"remote:{300 + list(MALFORMED).index(case)}", url=server.url, token=server.token)
    kept = burn.tensor([4.0, 5.0], device=bystander)
    ws = _raw(server.url, server.token)
    ws.send(MALFORMED[case])
    kind, meta = _reply(ws)
    assert kind == ERROR and meta["kind"] == "protocol", meta
    _closed_with(ws, 1002)
    assert kept.tolist() == [4.0, 5.0]
    _still_serves(server)


def _op_error(ws, *records):
    """Send op records, then SYNC: the reply is the error of the first bad one."""
    ws.send(frame(OPS, (tuple(records), ())))
    ws.send(frame(SYNC, None))
    return _reply(ws)


F32 = {"d": "float32"}

HOSTILE = {
    "unknown_kind": (("rm_rf", (), ((0, (1,), "float32"),)), "unknown op kind 'rm_rf'"),
    "unknown_tensor": (("exp", ({"t": 12345},), ((0, (1,), "float32"),)), "unknown tensor id 12345"),
    "shape_lie": (("full", ((100000, 100000), 0.0, F32), ((0, (1,), "float32"),)), "the op gives float32"),
    "dtype_lie": (("full", ((2,), 0.0, F32), ((0, (2,), "int64"),)), "the op gives float32"),
    "negative_dim": (("full", ((-5,), 0.0, F32), ((0, (-5,), "float32"),)), "malformed output"),
    "too_big": (
        ("full", ((1 << 20, 1 << 20), 0.0, F32), ((0, (1 << 20, 1 << 20), "float32"),)),
        "memory limit",
    ),
    "bad_args": (("reshape", ({"t": 0},), ((1, (2,), "float32"),)), ""),
    "format_string": (
        ("check_index", ({"t": 0}, 2, True, "{value.__class__.__mro__}"), ((1, (2,), "float32"),)),
        "only field is {value}",
    ),
    "unknown_dtype": (("full", ((2,), 0.0, F32), ((0, (2,), "float7"),)), "unknown dtype"),
}


@pytest.mark.parametrize("case", list(HOSTILE))
def test_hostile_op_is_an_error_reply_and_the_session_lives_on(server, case):
    record, message = HOSTILE[case]
    ws = _raw(server.url, server.token)
    if case in ("bad_args", "format_string"):  # a tensor 0 of shape (2,) to point at
        ws.send(frame(OPS, ((("full", ((2,), 1.0, F32), ((0, (2,), "float32"),)),), ())))
    kind, meta = _op_error(ws, record)
    assert kind == ERROR and meta["kind"] == "op" and message in meta["message"], meta
    # the session still works: a good op, a read
    ws.send(frame(OPS, ((("full", ((3,), 2.0, F32), ((77, (3,), "float32"),)),), ())))
    ws.send(frame(READ, ((77,),)))
    kind, meta = _reply(ws)
    assert kind != ERROR, meta
    ws.close()
    _still_serves(server)


# Hostile repeats of an op whose signature already ran and was checked (the server's fast path): each is
# still refused, by the same check as the first time.
REPEATED = {
    "id_in_use": ((1, (4,), "float32"), "already in use"),
    "shape_lie": ((9, (5,), "float32"), "the client declared float32[5]"),
    "dtype_lie": ((9, (4,), "int64"), "the client declared int64"),
    "negative_id": ((-3, (4,), "float32"), "malformed output"),
    "bad_output": ((9, (4,)), "malformed output"),
}


@pytest.mark.parametrize("case", list(REPEATED))
def test_repeated_signature_is_checked_every_time(server, case):
    out, message = REPEATED[case]
    ws = _raw(server.url, server.token)
    setup = [("full", ((4,), 1.0, F32), ((0, (4,), "float32"),))]
    setup += [("mul", ({"t": 0}, 2.0), ((i, (4,), "float32"),)) for i in (1, 2, 3)]  # the plan is made
    kind, meta = _op_error(ws, *setup, ("mul", ({"t": 0}, 2.0), (out,)))
    assert kind == ERROR and meta["kind"] == "op" and message in meta["message"], meta
    ws.send(frame(READ, ((3,),)))  # the good repeats ran
    kind, meta = _reply(ws)
    assert kind != ERROR and meta[1][0][2] == (4,), meta
    ws.close()


def test_many_pipelined_frames_run_in_order(server):
    """More frames than the server queues per session (it stops reading until its worker catches up):
    every op runs, in order; the result is checked against numpy."""
    ws = _raw(server.url, server.token)
    ws.send(frame(OPS, ((("full", ((3,), 1.0, F32), ((0, (3,), "float32"),)),), ())))
    tid = 0
    for _ in range(100):  # 100 frames of 20 ops, each input dropped with the next frame
        records = []
        for _ in range(20):
            records.append(("add", ({"t": tid}, 0.5), ((tid + 1, (3,), "float32"),)))
            tid += 1
        ws.send(frame(OPS, (tuple(records), tuple(range(tid - 20, tid)))))
    ws.send(frame(READ, ((tid,),)))
    kind, meta, raw = unframe(ws.recv(timeout=10), SERVER_FRAMES)
    assert kind != ERROR and meta[0] is True, meta
    ws.close()
    np.testing.assert_array_equal(np.frombuffer(raw, np.float32), np.full(3, 1001.0, np.float32))


def test_one_client_cannot_name_another_clients_tensors(server):
    victim = burn.device("remote:400", url=server.url, token=server.token)
    secret = burn.tensor([3.0, 1.0, 4.0], device=victim)
    tid = secret.primitive.ref.id
    ws = _raw(server.url, server.token)
    ws.send(frame(READ, ((tid,),)))
    kind, meta = _reply(ws)
    assert kind == ERROR and "not a tensor of this session" in meta["message"]
    kind, meta = _op_error(ws, ("mul", ({"t": tid}, 0.0), ((tid, (3,), "float32"),)))
    assert kind == ERROR and f"unknown tensor id {tid}" in meta["message"]
    ws.close()
    assert secret.tolist() == [3.0, 1.0, 4.0]


def test_oversized_frame_closes_the_session(start_server):
    srv = start_server("--max-frame-mib", "1", token="t0ken")
    ws = _raw(srv.url, "t0ken")
    ws.send(frame(OPS, ((), ())) + b"\0" * (2 << 20))
    _closed_with(ws, 1009)
    _still_serves(srv)


def test_session_memory_limit(start_server):
    srv = start_server("--max-session-mib", "1")
    dev = burn.device("remote", url=srv.url)
    small = burn.zeros((1000,), device=dev)
    with pytest.raises(RemoteError, match="session memory limit"):
        burn.zeros((1000, 1000), device=dev).numpy()  # 4 MB
    assert small.sum().item() == 0.0
    big = np.ones((3, 1024, 1024), np.float32)  # 12 MiB: an upload in chunks, refused as a whole
    with pytest.raises(RemoteError, match="session memory limit"):
        burn.from_numpy(big, device=dev).numpy()
    assert small.sum().item() == 0.0  # the session lives on
    for _ in range(20):  # freed tensors give their memory back: 20 x 400 kB in a 1 MiB session
        assert float(burn.ones((100, 1000), device=dev).sum().item()) == 100000.0


def test_refuses_non_loopback_without_token():
    proc = subprocess.run(
        [sys.executable, "-m", "burn", "remote", "serve", "--host", "0.0.0.0", "--port", "0"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 2 and "refusing to listen beyond this machine without a token" in proc.stderr


def test_tls(start_server, tmp_path):
    pytest.importorskip("cryptography")
    cert, key = _self_signed(tmp_path)
    srv = start_server("--tls-cert", str(cert), "--tls-key", str(key), token="s3cret")
    assert srv.url.startswith("wss://127.0.0.1:")
    dev = burn.device("remote", url=srv.url, token="s3cret", tls_ca=str(cert))
    assert burn.arange(0, 4, device=dev).tolist() == [0, 1, 2, 3]
    with pytest.raises(RemoteError, match="cannot connect"):  # an unknown certificate is refused
        _ = burn.device("remote:1", url=srv.url, token="s3cret").backend


def _self_signed(tmp_path):
    import datetime
    import ipaddress

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), False
        )
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), True)
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = tmp_path / "cert.pem", tmp_path / "key.pem"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    )
    return cert_path, key_path


def test_server_logs_sessions_not_data(server):
    dev = burn.device("remote:500", url=server.url, token=server.token)
    burn.tensor([123456.789], device=dev).numpy()
    assert server.wait_log("session")
    log = "".join(server.log)
    assert "123456" not in log and server.token not in log


def test_done_reply_to_sync(server):
    ws = _raw(server.url, server.token)
    ws.send(frame(SYNC, None))
    assert _reply(ws)[0] == DONE
    ws.close()
    assert msgpack and np  # the raw frames above are msgpack; arrays compared elsewhere
