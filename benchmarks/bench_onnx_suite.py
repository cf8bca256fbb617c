"""The ONNX backend conformance suite on burn-onnx and on onnxruntime, in one run; prints one JSON document.

The suite is the node test cases the installed ``onnx`` generates (``burn_onnx.conformance``: 1,884 with
onnx 1.23.2), each judged as onnx's backend test runner judges it (output count, shapes and dtypes
exact, ``assert_allclose(rtol=1e-3, atol=1e-7)``) and counted as pass / unsupported / wrong / crash.
burn-onnx runs each case through ``burn_onnx.load`` on each requested device (``wgpu`` is skipped with
its reason where no adapter is available); onnxruntime runs the same cases on its CPU provider, one
thread, graph optimizations off. An onnxruntime ``NotImplemented`` error (no kernel for the op or its
types) counts as unsupported, any other error as a crash.

The JSON has, per engine, the counts and the seconds the run took; ``pass_ratio`` is each burn device's
pass count over onnxruntime's; ``only_onnxruntime_passes`` / ``only_burn_passes`` count the cases that
one side passes and the other does not (per burn device); ``--names`` lists them, and the names per
status of every engine (``by_status``).

    python benchmarks/bench_onnx_suite.py [--devices cpu,wgpu] [--names] [--out results.json]
"""

from __future__ import annotations

import argparse
import platform
import time
from collections import Counter
from typing import Any

import numpy as np
from _common import emit_json

STATUSES = ("pass", "unsupported", "wrong", "crash")

_SUB_BYTE_BITS = {21: 4, 22: 4, 23: 4, 25: 2, 26: 2}  # ONNX types onnxruntime packs several to a byte


def _ort_value(arr: np.ndarray) -> Any:
    """A numpy array as an onnxruntime OrtValue; types numpy lacks (ml_dtypes: bfloat16, float8, int4)
    passed as their bytes, the 4- and 2-bit ones packed low bits first as onnxruntime stores them."""
    import ctypes

    import onnxruntime as ort
    from onnx import helper

    code = 0 if arr.dtype.kind in "OSU" else int(helper.np_dtype_to_tensor_dtype(arr.dtype))
    if code < 16:
        return ort.OrtValue.ortvalue_from_numpy(np.ascontiguousarray(arr))
    raw = np.ascontiguousarray(arr).reshape(-1).view(np.uint8 if arr.dtype.itemsize == 1 else np.uint16)
    bits = _SUB_BYTE_BITS.get(code)
    if bits:
        per = 8 // bits
        vals = np.zeros(-(-raw.size // per) * per, np.uint8)
        vals[: raw.size] = raw & ((1 << bits) - 1)
        raw = np.bitwise_or.reduce(vals.reshape(-1, per) << (np.arange(per, dtype=np.uint8) * bits), axis=1)
        raw = raw.astype(np.uint8)
    if not bits:
        return ort.OrtValue.ortvalue_from_numpy_with_onnx_type(raw.reshape(arr.shape), code)
    fresh = ort.OrtValue.ortvalue_from_shape_and_type(list(arr.shape), code)
    assert fresh.tensor_size_in_bytes() == raw.nbytes
    ctypes.memmove(fresh.data_ptr(), raw.ctypes.data, raw.nbytes)
    return fresh


def _numpy(value: Any) -> Any:
    """An onnxruntime output as numpy data (ml_dtypes arrays for the types numpy lacks)."""
    import ctypes

    from onnx import helper

    if not value.is_tensor():
        return value.numpy()
    name = value.data_type()[len("tensor(") : -1].upper()
    code = int(getattr(helper.TensorProto, name, 0))
    if code < 16:  # numpy has the type (onnxruntime gives float8 as uint8 bytes: not those)
        return value.numpy()
    shape = tuple(value.shape())
    raw = np.frombuffer(
        bytes((ctypes.c_uint8 * value.tensor_size_in_bytes()).from_address(value.data_ptr())), np.uint8
    )
    bits = _SUB_BYTE_BITS.get(code)
    target = helper.tensor_dtype_to_np_dtype(code)
    if bits:
        per = 8 // bits
        raw = ((raw[:, None] >> (np.arange(per, dtype=np.uint8) * bits)) & ((1 << bits) - 1)).reshape(-1)
        raw = raw[: int(np.prod(shape))].astype(np.uint8)
        return raw.view(target).reshape(shape)
    return raw.view(target).reshape(shape)


def run_onnxruntime(model: Any, inputs: list[Any]) -> list[Any]:
    """One case on onnxruntime's CPU provider (one thread, no graph optimizations): the engine
    ``burn_onnx.conformance`` judges; its ``NotImplemented`` (no kernel) is a NotImplementedError."""
    import onnxruntime as ort

    inits = {i.name for i in model.graph.initializer}
    names = [vi.name for vi in model.graph.input if vi.name not in inits]
    feeds = {n: v if isinstance(v, list) else np.asarray(v) for n, v in zip(names, inputs) if v is not None}
    plain = all(isinstance(v, list) or v.dtype.kind != "V" for v in feeds.values())
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    opts.log_severity_level = 4
    try:
        session = ort.InferenceSession(model.SerializeToString(), opts, providers=["CPUExecutionProvider"])
        try:
            if not plain:
                raise RuntimeError("inputs of types numpy lacks")
            return list(session.run(None, feeds))
        except RuntimeError as exc:  # bfloat16, float8, int4 in or out: through OrtValues
            if plain and "Numpy" not in str(exc):
                raise
            ort_feeds = {n: _ort_value(v) for n, v in feeds.items()}
            return [_numpy(v) for v in session.run_with_ort_values(None, ort_feeds)]
    except Exception as exc:
        if type(exc).__name__ == "NotImplemented":
            raise NotImplementedError(f"NotImplemented: {exc}") from exc
        raise


def _engine(results: dict[str, Any], seconds: float, with_names: bool) -> dict[str, Any]:
    found = Counter(r.status for r in results.values())
    out: dict[str, Any] = {s: found.get(s, 0) for s in STATUSES}
    out["seconds"] = round(seconds, 1)
    if with_names:
        out["by_status"] = {s: sorted(n for n, r in results.items() if r.status == s) for s in STATUSES}
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--devices", default="cpu,wgpu", help="comma list of burn devices (cpu, wgpu, cuda)")
    ap.add_argument("--names", action="store_true", help="list the case names per status and engine")
    ap.add_argument("--out", help="also write the JSON here")
    args = ap.parse_args()

    import burn
    import burn_onnx
    import onnx
    import onnxruntime as ort

    start = time.perf_counter()
    burn_onnx.conformance("cpu", names=[])  # builds the cases once (what collect_seconds times)
    result: dict[str, Any] = {
        "env": {
            "python": platform.python_version(),
            "burn": burn.__version__,
            "onnx": onnx.__version__,
            "onnxruntime": ort.__version__,
            "machine": platform.machine(),
        },
        "suite": "onnx.backend.test.case.node, judged as onnx's backend test runner (rtol 1e-3, atol 1e-7)",
        "cases": None,
        "collect_seconds": round(time.perf_counter() - start, 1),
        "engines": {},
    }
    start = time.perf_counter()
    reference = burn_onnx.conformance(engine=run_onnxruntime)
    result["cases"] = len(reference)
    result["engines"]["onnxruntime"] = _engine(reference, time.perf_counter() - start, args.names)
    ort_pass = sum(r.status == "pass" for r in reference.values())
    for name in args.devices.split(","):
        try:
            dev = burn.device(name)
        except Exception as exc:  # no adapter, no CUDA: say so and go on
            result["engines"][f"burn-{name}"] = {"skipped": f"{type(exc).__name__}: {exc}"}
            continue
        start = time.perf_counter()
        got = burn_onnx.conformance(dev)
        entry = _engine(got, time.perf_counter() - start, args.names)
        entry["pass_ratio"] = round(entry["pass"] / max(ort_pass, 1), 3)
        only_ort = sorted(n for n, r in reference.items() if r.status == "pass" and got[n].status != "pass")
        only_burn = sorted(n for n, r in got.items() if r.status == "pass" and reference[n].status != "pass")
        entry["only_onnxruntime_passes"] = only_ort if args.names else len(only_ort)
        entry["only_burn_passes"] = only_burn if args.names else len(only_burn)
        result["engines"][f"burn-{name}"] = entry
    emit_json(result, args.out)


if __name__ == "__main__":
    main()
