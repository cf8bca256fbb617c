"""Every row of the op table captured with ``burn.ir.capture`` (symbolic inputs, nothing computed) and
replayed with ``burn.ir.replay`` on the backend under test gives what running the row directly gives.

Replay runs the same backend methods as the direct call, so results must agree exactly, and every
op's recorded shape and dtype must be what the backend produced (``replay`` checks each op). A row
whose call reads a value on the host (a data-dependent shape or check) cannot be captured: it must
fail with the clear ``IrError`` of a read under capture, never anything else.
"""

from __future__ import annotations

import zlib

import numpy as np

import burn
from burn import ir
from burn.testing._specs import Ctx


def _flat(out):
    return list(out) if isinstance(out, (tuple, list)) else [out]


def test_captured_op_replays_like_the_direct_call(burn_op_case, burn_device):
    spec, dtype_name = burn_op_case
    backend = burn_device.backend
    dtype = burn.dtype(dtype_name)
    rng = np.random.default_rng(zlib.crc32(f"{spec.name}/{dtype_name}".encode()))
    arrays = spec.inputs(rng, dtype_name)
    try:
        tensors = [burn.from_numpy(a, device=burn_device) for a in arrays]
        direct = _flat(spec.call(Ctx(burn_device, dtype), *tensors))
    except burn.DTypeError:  # a dtype this backend lacks: test_conformance checks that error
        return
    shapes = {f"x{i}": (t.shape, t.dtype) for i, t in enumerate(tensors)}
    try:
        graph = ir.capture(
            lambda *xs: spec.call(Ctx(ir.capture_device(), dtype), *xs), shapes, like=burn_device
        )
    except ir.IrError as exc:
        assert "cannot read tensors" in str(exc), f"{spec.name}: {exc}"
        return
    graph = ir.Graph.from_bytes(graph.to_bytes())  # through the wire form, as remote and export use it
    assert len(graph.outputs) == len(direct), spec.name
    replayed = _flat(ir.replay(graph, tensors, device=burn_device))
    for i, (r, d) in enumerate(zip(replayed, direct, strict=True)):
        assert r.dtype is d.dtype and r.shape == d.shape, f"{spec.name} output {i}"
        np.testing.assert_array_equal(
            r.numpy(), d.numpy(), err_msg=f"{spec.name} output {i} on {backend.name}", strict=True
        )
