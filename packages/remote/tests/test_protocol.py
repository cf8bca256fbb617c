"""Protocol 2: signatures and compact op records (each checked every time, hostile ones refused without
harming the session or others), a clear error for a peer speaking another protocol version, floats
that change per op under one signature, the fallback to full records past ``MAX_SIGNATURES``, and reads
streamed in several DATA frames."""

from __future__ import annotations

import inspect
import struct

import burn
import burn_remote
import numpy as np
import pytest
from burn_remote import ProtocolError
from burn_remote import _backend as remote_backend_module
from burn_remote import _protocol as protocol
from burn_remote._protocol import (
    CHUNK,
    ERROR,
    HELLO,
    MAX_SIGNATURE_SIZE,
    MAX_SIGNATURES,
    OPS,
    PROTOCOL_VERSION,
    READ,
    SERVER_FRAMES,
    SYNC,
    WELCOME,
    frame,
    signature_size,
    unframe,
)
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import connect

F32 = {"d": "float32"}
V4 = ((4,), "float32")


def _raw(server):
    extra = {"legacy": True} if "legacy" in inspect.signature(connect).parameters else {}
    ws = connect(server.url, compression=None, proxy=None, open_timeout=10, max_size=None, **extra)
    ws.send(frame(HELLO, {"token": server.token}))
    assert unframe(ws.recv(timeout=10), SERVER_FRAMES)[0] == WELCOME
    return ws


def _reply(ws):
    kind, meta, raw = unframe(ws.recv(timeout=10), SERVER_FRAMES)
    return kind, meta, raw


def _closed_with(ws, code):
    try:
        while True:
            ws.recv(timeout=10)
    except ConnectionClosed as exc:
        assert exc.rcvd is not None and exc.rcvd.code == code, exc
        return
    raise AssertionError("the session stayed open")


def _read(ws, tid):
    """Tensor ``tid`` as float32 values, or the ERROR frame's meta."""
    ws.send(frame(READ, ((tid,),)))
    kind, meta, raw = _reply(ws)
    if kind == ERROR:
        return meta
    assert meta[0] is True
    return np.frombuffer(bytes(raw), np.float32)


# tensor 0 = full((4,), 1.0); signature 0 = mul(float32[4], <float>); signature 1 = add(float32[4] x 2)
SETUP = (
    ("full", ((4,), 1.0, F32), ((0, (4,), "float32"),)),
    (None, 0, "mul", ({"t": 0}, 2.0), (V4,), (V4,), (1,)),
    (None, 1, "add", ({"t": 0}, {"t": 1}), (V4, V4), (V4,), ()),
)


def test_compact_records_run_and_floats_change_per_op(server):
    ws = _raw(server)
    records = [*SETUP, (0, 1, 0, 3.0), (0, 2, 1, 0.5), (1, 3, 1, 2)]  # 1 = 3, 2 = 1.5, 3 = 4.5
    ws.send(frame(OPS, (tuple(records), ())))
    np.testing.assert_array_equal(_read(ws, 3), np.full(4, 4.5, np.float32))
    ws.close()


def test_version_mismatch_is_a_clear_error_on_both_sides(server, monkeypatch):
    extra = {"legacy": True} if "legacy" in inspect.signature(connect).parameters else {}
    ws = connect(server.url, compression=None, proxy=None, open_timeout=10, max_size=None, **extra)
    old = b"BR" + bytes([1, HELLO]) + frame(HELLO, {"token": server.token})[4:]  # a protocol 1 client
    ws.send(old)
    kind, meta, _ = _reply(ws)
    assert kind == ERROR and meta["kind"] == "protocol"
    assert f"protocol version 1 is not supported (this side speaks {PROTOCOL_VERSION})" in meta["message"]
    _closed_with(ws, 1002)
    # a client of another version learns it from the server's reply, as a clear error
    monkeypatch.setattr(protocol, "PROTOCOL_VERSION", PROTOCOL_VERSION + 1)
    with pytest.raises(ProtocolError, match=f"protocol version {PROTOCOL_VERSION} is not supported"):
        _ = burn.device("remote:990", url=server.url, token=server.token).backend
    with pytest.raises(ProtocolError, match="matching burn-remote versions"):
        unframe(b"BR" + bytes([PROTOCOL_VERSION, SYNC]) + struct.pack("<I", 1) + b"\xc0", SERVER_FRAMES)


MALFORMED = {
    "undefined_signature": (5, 1, 0, 2.0),
    "negative_signature": (-1, 1, 0, 2.0),
    "too_few_ids": (0, 1, 0),
    "too_many_ids": (0, 1, 0, 2.0, 7),
    "signature_number_skipped": (None, 9, "exp", ({"t": 0},), (V4,), (V4,), ()),
    "signature_fields_not_lists": (None, 2, "exp", 5, (V4,), (V4,), ()),
    "signature_without_outputs": (None, 2, "exp", ({"t": 0},), (V4,), (), ()),
    "signature_too_large": (None, 2, "reshape", ({"t": 0}, (1,) * 300), (V4,), (V4,), ()),
    "too_many_float_positions": (None, 2, "exp", ({"t": 0},), (V4,), (V4,), (0, 1)),
    "signature_number_past_the_limit": (None, MAX_SIGNATURES, "exp", ({"t": 0},), (V4,), (V4,), ()),
}


@pytest.mark.parametrize("case", list(MALFORMED))
def test_malformed_compact_record_closes_only_that_session(server, remote, case):
    kept = burn.tensor([4.0, 5.0], device=remote)
    ws = _raw(server)
    ws.send(frame(OPS, ((*SETUP, MALFORMED[case]), ())))
    kind, meta, _ = _reply(ws)
    assert kind == ERROR and meta["kind"] == "protocol", meta
    _closed_with(ws, 1002)
    assert kept.tolist() == [4.0, 5.0]
    assert (kept * 2.0).tolist() == [8.0, 10.0]


HOSTILE = {
    "unknown_input": ((0, 5, 12345, 2.0), "unknown tensor id 12345"),
    "input_of_other_shape": ((0, 6, 9, 2.0), "its signature says float32[4]"),
    "output_in_use": ((0, 0, 0, 2.0), "output id 0 is already in use"),
    "negative_output": ((0, -4, 0, 2.0), "malformed output id -4"),
    "output_not_an_int": ((0, "x", 0, 2.0), "malformed output id"),
    "int_for_a_float": ((0, 5, 0, 2), "expected a float"),
    "bool_input_id": ((0, 5, True, 2.0), "unknown tensor id True"),
    "shape_lie": ((None, 2, "exp", ({"t": 0},), (V4,), (((5,), "float32"),), ()), "the op gives float32[4]"),
    "input_lie": ((None, 2, "matmul", ({"t": 0}, {"t": 1}), (V4, V4), (((4,), "float32"),), ()), "invalid"),
    "float_position_not_variable": (
        (None, 2, "sum", ({"t": 0}, (0,), False), (V4,), (((), "float32"),), (2,)),
        "float position 2 is not a float argument",
    ),
    "float_fixed_for_this_op": (
        (None, 2, "var", ({"t": 0}, (0,), 1.5, False), (V4,), (((), "float32"),), (2,)),
        "cannot change per op",
    ),
    "slots_out_of_order": ((None, 2, "add", ({"t": 1}, {"t": 0}), (V4, V4), (V4,), ()), "expected 0"),
    "unknown_kind": ((None, 2, "rm_rf", ({"t": 0},), (V4,), (V4,), ()), "unknown op kind 'rm_rf'"),
    "array_in_signature": (
        (None, 2, "from_numpy", ({"a": ("<f4", (1,), b"\0\0\0\0")}, F32), (), (((1,), "float32"),), ()),
        "from_numpy",
    ),
    "too_big": (
        (None, 2, "full", ((1 << 20, 1 << 20), 0.5, F32), (), (((1 << 20, 1 << 20), "float32"),), (1,)),
        "memory limit",
    ),
}


@pytest.mark.parametrize("case", list(HOSTILE))
def test_hostile_compact_record_is_an_error_reply_and_the_session_lives_on(server, case):
    record, message = HOSTILE[case]
    ws = _raw(server)
    nine = ("full", ((3,), 1.0, F32), ((9, (3,), "float32"),))  # a tensor of another shape
    records = [*SETUP, nine, record]
    if record[0] is None:  # a signature: its first op, which must fail (or be refused) too
        sid, n_in = record[1], len(record[4])
        records.append((sid, 20, *range(n_in), *(record[3][p] for p in record[6])))
    ws.send(frame(OPS, (tuple(records), ())))
    ws.send(frame(SYNC, None))
    kind, meta, _ = _reply(ws)
    assert kind == ERROR and meta["kind"] == "op" and message in meta["message"], meta
    if record[0] is None:  # the op of the refused signature holds its error
        err = _read(ws, 20)
        assert isinstance(err, dict) and message in err["message"], err
    # the session still works, compact records included
    ws.send(frame(OPS, (((0, 30, 0, 4.0),), ())))
    np.testing.assert_array_equal(_read(ws, 30), np.full(4, 4.0, np.float32))
    np.testing.assert_array_equal(_read(ws, 0), np.full(4, 1.0, np.float32))
    ws.close()


def test_compact_record_cannot_name_another_sessions_tensor(server, remote):
    others = [burn.ones((1,), device=remote) for _ in range(60)]  # ids past those of the raw session
    secret = burn.tensor([3.0, 1.0, 4.0, 1.0], device=remote)
    secret.numpy()
    tid = secret.primitive.id
    assert tid >= 60 and others
    ws = _raw(server)
    ws.send(frame(OPS, ((*SETUP, (0, 40, tid, 0.0)), ())))
    ws.send(frame(SYNC, None))
    kind, meta, _ = _reply(ws)
    assert kind == ERROR and f"unknown tensor id {tid}" in meta["message"], meta
    ws.close()
    assert secret.tolist() == [3.0, 1.0, 4.0, 1.0]


def test_failed_input_poisons_compact_outputs(server):
    """An op whose input failed does not run: its output holds the input's error (reported once)."""
    ws = _raw(server)
    lie = ("full", ((2,), 1.0, F32), ((50, (4,), "float32"),))  # refused: the op gives float32[2]
    ws.send(frame(OPS, ((*SETUP, lie, (0, 51, 50, 2.0), (0, 52, 0, 2.0)), ())))
    ws.send(frame(SYNC, None))
    kind, meta, _ = _reply(ws)
    assert kind == ERROR and "the op gives float32[2]" in meta["message"], meta
    err = _read(ws, 51)
    assert isinstance(err, dict) and "the op gives float32[2]" in err["message"], err
    np.testing.assert_array_equal(_read(ws, 52), np.full(4, 2.0, np.float32))
    ws.close()


def test_one_signature_serves_every_scalar(remote):
    backend = burn_remote.remote_backend(remote)
    cpu = burn.device("cpu")
    values = np.linspace(-1, 1, 16, dtype=np.float32)
    x, y = burn.tensor(values, device=remote), burn.tensor(values, device=cpu)
    (x * 0.5 + 0.25).numpy()  # defines mul and add of float32[16] by a float
    n_sigs = backend.conn.n_sigs
    for i in range(50):
        s = 0.9 + i / 1000
        x, y = x * s + (1.0 - s), y * s + (1.0 - s)
    assert backend.conn.n_sigs == n_sigs, "a new float must not make a new signature"
    np.testing.assert_array_equal(x.numpy(), y.numpy())


def test_full_records_past_max_signatures(remote, monkeypatch):
    monkeypatch.setattr(remote_backend_module, "MAX_SIGNATURES", 2)  # this client: two signatures at most
    backend = burn_remote.remote_backend(remote)
    a = np.arange(12, dtype=np.float32).reshape(3, 4) / 12

    def program(dev):
        x = burn.tensor(a, device=dev)
        outs = []
        for _ in range(3):  # two signatures, then full records for the others
            x = (x.reshape(4, 3).exp().sum(0) / 7.0 + 1.5).log().reshape(3, 1) * x
            outs.append(x.numpy())
        return outs

    for got, want in zip(program(remote), program(burn.device("cpu"))):
        assert np.isfinite(want).all()
        np.testing.assert_allclose(got, want, rtol=1e-5)
    assert backend.conn.n_sigs == 2


def test_signature_size_counts_every_value():
    assert signature_size((), (), ()) == 1
    assert signature_size(({"t": 0}, 2.0), (((4,), "float32"),), (((4,), "float32"),)) == 3 + 2 * 4
    assert signature_size(("x" * 130, (1, 2, 3)), (), ()) == 1 + 3 + 4
    assert signature_size(((1,) * MAX_SIGNATURE_SIZE,), (), ()) > MAX_SIGNATURE_SIZE


def test_reads_stream_several_frames(remote):
    """A transaction of a tensor larger than a frame, a small one and a 0-d one, read in one round trip:
    the DATA frames come one at a time and every byte matches."""
    rng = np.random.default_rng(1)
    big = rng.standard_normal(CHUNK // 4 + 1000).astype(np.float32)  # more than one frame
    small = rng.integers(-5, 5, (3, 2))
    tx = burn.Transaction()
    tb, ts = burn.from_numpy(big, device=remote), burn.tensor(small, device=remote)
    t0 = ts.sum()
    for t in (tb, ts, t0):
        tx.register(t)
    got = tx.execute()
    np.testing.assert_array_equal(got[0], big)
    np.testing.assert_array_equal(got[1], small)
    assert got[2].shape == () and got[2] == small.sum()
    assert (tb * 2.0).numpy()[-1] == big[-1] * 2


def test_fast_paths_match_numpy_backend(remote):
    """unary, binary, where and cast repeat signatures (their direct paths on the client) and still give
    what the numpy backend gives, scalars on either side included."""
    values = np.linspace(-2, 2, 12, dtype=np.float32).reshape(3, 4)

    def program(dev):
        x = burn.tensor(values, device=dev)
        outs = []
        for i in range(3):  # the first round defines the signatures, the others use them
            s = 0.5 + i
            m = x > 0.25 * i
            y = burn.where(m, x, s) + burn.where(m, -s, x) + burn.where(m, x, x * s)
            z = (y.exp().neg() * s - x) / (x.abs() + 1.0)
            outs += [y, z.relu(), z.int(), (z > 0).float(), 2.0 - x, 1.5 * x]
        return [o.numpy() for o in outs]

    for got, want in zip(program(remote), program(burn.device("cpu"))):
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)


def test_results_are_checked_against_the_signature():
    """In process: a backend whose result disagrees with the declared shape poisons the op's output (the
    first op of an element-wise signature is checked; ops of others every time)."""
    from burn.backend import Failed
    from burn_remote._protocol import WireRef
    from burn_remote._session import Limits, Session

    class Liar(type(burn.device("cpu").backend)):
        def binary(self, op, a, b):
            out = super().binary(op, a, b)
            return out[:2] if self.lie else out

    backend = Liar()
    backend.lie = True
    session = Session(backend, Limits())
    table, signatures = session.table, session.signatures
    table.prims[0] = np.ones(4, np.float32)
    table.metas[0] = table.meta((4,), burn.float32)
    signatures.define((None, 0, "mul", (WireRef(0), 2.0), (V4,), (V4,), (1,)))
    signatures.run_compact((0, 1, 0, 3.0))
    assert type(table.prims[1]) is Failed and "gave float32[2]" in str(table.prims[1].error)
    assert "gave float32[2]" in str(session.failures.first_error)
    backend.lie = False
    signatures.run_compact((0, 2, 0, 3.0))
    np.testing.assert_array_equal(table.prims[2], np.full(4, 3.0, np.float32))
    assert signatures.plans[0].verified


@pytest.mark.parametrize("host_memory", [True, False])
def test_upload_chunks_in_process(host_memory):
    """In process: an upload in several chunks becomes the tensor, written straight into it on a
    host-memory backend and staged then ``from_numpy``'d on any other; a read streams it back."""
    from burn_remote._protocol import DATA, UPLOAD
    from burn_remote._session import Limits, Session

    class Backend(type(burn.device("cpu").backend)):
        staged = 0

        def from_numpy(self, array, dtype):
            self.staged += 1
            return super().from_numpy(array, dtype)

    backend = Backend()
    backend.host_memory = host_memory
    session = Session(backend, Limits())
    arr = np.random.default_rng(2).standard_normal((3, 50_000)).astype(np.float32)
    data = memoryview(arr.reshape(-1)).cast("B")
    step = 100_000
    for off in range(0, len(data), step):
        meta = (7, "float32", "<f4", [3, 50_000], len(data), off)
        assert session.handle(frame(UPLOAD, meta, data[off : off + step])).frames == []
    assert session.uploads == {} and session.table.live_bytes == arr.nbytes
    np.testing.assert_array_equal(session.table.prims[7], arr)
    assert backend.staged == (0 if host_memory else 1)
    got = bytearray()
    for f in session.handle(frame(READ, ((7,),))).stream:
        kind, meta, raw = unframe(f, SERVER_FRAMES)
        assert kind == DATA
        got += raw
    np.testing.assert_array_equal(np.frombuffer(bytes(got), np.float32).reshape(3, 50_000), arr)


def test_threads_share_one_session(remote):
    """Several threads queue ops on one connection at once (no lock on the op path): every op arrives,
    signatures are defined once each and in order, and each thread's result is numpy's."""
    import threading

    results: dict[int, np.ndarray] = {}
    errors: list[BaseException] = []

    def work(k: int) -> None:
        try:
            x = burn.tensor(np.linspace(-1, 1, 8 + k % 2, dtype=np.float32), device=remote)  # two shapes
            for i in range(600):
                x = (x * 0.999 + 0.001 * (k + 1)).relu() - 0.0005 if i % 2 else x.exp().log() + (x * x) * 0.0
            results[k] = x.numpy()
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not errors, errors
    cpu = burn.device("cpu")
    for k in range(4):
        x = burn.tensor(np.linspace(-1, 1, 8 + k % 2, dtype=np.float32), device=cpu)
        for i in range(600):
            x = (x * 0.999 + 0.001 * (k + 1)).relu() - 0.0005 if i % 2 else x.exp().log() + (x * x) * 0.0
        np.testing.assert_allclose(results[k], x.numpy(), rtol=1e-5, atol=1e-6)


def test_a_step_mark_runs_the_frame_and_a_malformed_mark_closes_the_session(server):
    ws = _raw(server)
    ws.send(frame(OPS, ((*SETUP, (0, 5, 0, 3.0)), (), True)))  # the client's mark_step: ops, then the mark
    np.testing.assert_array_equal(_read(ws, 5), [3.0] * 4)
    ws.send(frame(OPS, ((), (), 1)))
    kind, meta, _ = _reply(ws)
    assert kind == ERROR and "step mark" in meta["message"], meta
    _closed_with(ws, 1002)


def test_mark_step_on_a_remote_device_reaches_the_server(remote):
    import burn.fusion

    x = burn.tensor([1.0, 2.0], device=remote)
    y = x * 2.0
    before = remote.backend.counters()["submits"]
    burn.fusion.mark_step(remote)  # queued ops go out with the mark, without a round trip
    assert remote.backend.counters()["submits"] == before + 1
    assert y.tolist() == [2.0, 4.0]
