"""Every row of the op table (``burn.testing.SPECS``), for every dtype it lists, on the backend under
test, compared with the numpy backend: same shape, same dtype, values within the dtype's tolerance."""

from __future__ import annotations

import zlib

import numpy as np
import pytest

import burn
from burn.testing._specs import TOL, Ctx


def _flat(out):
    return list(out) if isinstance(out, (tuple, list)) else [out]


def _run(spec, ctx_cls, device, dtype, arrays):
    tensors = [burn.from_numpy(a, device=device) for a in arrays]
    return _flat(spec.call(ctx_cls(device, dtype), *tensors))


def _float32_inputs(arrays):
    return [a.astype(np.float32) if a.dtype.name == "bfloat16" else a for a in arrays]


def test_op_matches_numpy_backend(burn_op_case, burn_device, burn_reference_device):
    spec, dtype_name = burn_op_case
    backend_device, reference_device = burn_device, burn_reference_device
    dtype = burn.dtype(dtype_name)
    backend = backend_device.backend
    rng = np.random.default_rng(zlib.crc32(f"{spec.name}/{dtype_name}".encode()))  # stable across runs
    arrays = spec.inputs(rng, dtype_name)
    expected = _run(spec, Ctx, reference_device, dtype, arrays)
    # bfloat16: dtypes and shapes from the numpy backend's bfloat16 run, values from its float32 run
    # on the same inputs (exact in float32): the bfloat16 backend computes in float32 and rounds
    values = None
    if dtype is burn.bfloat16:
        values = _run(spec, Ctx, reference_device, burn.float32, _float32_inputs(arrays))
    try:
        got = _run(spec, Ctx, backend_device, dtype, arrays)
    except burn.DTypeError as exc:  # e.g. cast_to_float64 on a backend without float64
        # asking for a dtype the backend does not declare must be this clear error, and only then
        assert f"is not supported by backend {backend.name!r}" in str(exc), str(exc)
        assert any(d not in backend.dtypes for d in expected_dtypes(expected)), str(exc)
        return
    assert len(got) == len(expected), f"{spec.name}: {len(got)} outputs, expected {len(expected)}"
    rtol, atol = spec.tolerance(dtype_name)
    for i, (g, e) in enumerate(zip(got, expected)):
        assert g.device == backend_device
        # "default int" results (argmax, sort indices, sums of bools) follow each backend's default_int
        default_int = e.dtype is reference_device.backend.default_int and g.dtype is backend.default_int
        assert g.dtype is e.dtype or default_int, (
            f"{spec.name} output {i}: dtype {g.dtype} != numpy backend's {e.dtype}"
        )
        assert g.dtype is g.backend.dtype_of(g.primitive), (
            f"{spec.name}: cached dtype disagrees with the backend"
        )
        gv, ev = g.numpy(), (e if values is None else values[i]).numpy()
        if gv.dtype.name == "bfloat16":
            gv = gv.astype(np.float32)
        assert gv.shape == ev.shape, f"{spec.name} output {i}: shape {gv.shape} != {ev.shape}"
        tol = (
            max(rtol, TOL.get(g.dtype.name, (0, 0))[0]),
            max(atol, TOL.get(g.dtype.name, (0, 0))[1]),
        )
        np.testing.assert_allclose(
            gv, ev, rtol=tol[0], atol=tol[1], equal_nan=True, err_msg=f"{spec.name} output {i}"
        )
    if spec.ref is not None and backend.name == "ndarray":
        # on the reference itself, check against the independent numpy formulation
        ref = _flat(spec.ref(*_float32_inputs(arrays)))
        for g, r in zip(got, ref):
            gv = g.numpy()
            gv = gv.astype(np.float32) if gv.dtype.name == "bfloat16" else gv
            r = np.asarray(r)
            np.testing.assert_allclose(gv, r.astype(gv.dtype), rtol=rtol * 10, atol=atol * 10, equal_nan=True)


def expected_dtypes(outputs):
    return [t.dtype for t in outputs]


def test_undeclared_dtypes_are_clear_errors(burn_device):
    """Creating a tensor of a dtype the backend does not declare fails with a DTypeError naming it."""
    backend = burn_device.backend
    for dt in (d for d in burn._dtype.ALL_DTYPES if d not in backend.dtypes):
        with pytest.raises(burn.DTypeError, match=f"{dt.name} is not supported by backend"):
            burn.zeros(2, dtype=dt, device=burn_device)


def test_unavailable_backends_give_reasons():
    """A backend that cannot run here is left out of the table above, and must say why."""
    for name, reason in {i.name: i.reason for i in burn.backends() if not i.available}.items():
        assert reason.strip(), f"backend {name} is unavailable without a reason"
        with pytest.raises(burn.BackendUnavailableError, match=name):
            _ = burn.device(name).backend
