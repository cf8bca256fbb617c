"""burn-onnx against onnxruntime on a ResNet-like CNN, side by side in one run; prints one JSON document.

The model (built here with onnx.helper, random weights): a 3x3 stem conv + BN + ReLU + max pool, two basic
residual blocks at 32 channels, a strided block to 64 and one to 128 channels, global average pool and a
10-way Gemm; input (N, 3, 64, 64). For each batch size, ``burn_onnx.load`` runs it on each requested
burn device and onnxruntime runs it on the CPU with the same thread count as numpy's BLAS, from the same
inputs: milliseconds per forward, the ratio burn / onnxruntime, and the largest output difference.
``--runs N`` times each case N times, alternating burn and onnxruntime (a loaded machine drifts):
``*_ms`` and the ratio are the medians over the runs, ``runs`` lists each run's figures.
``--no-optimize`` loads with ``optimize=False`` (the file's nodes one by one, no BN folding).

    python benchmarks/bench_onnx.py [--devices cpu,wgpu,cuda] [--batches 1,32] [--runs 3] [--out results.json]
"""

from __future__ import annotations

import argparse
import os
import platform
from typing import Any

import numpy as np
from _common import emit_json, time_for


def resnet_like(seed: int = 0) -> bytes:
    """The benchmark's model as ONNX bytes (opset 17)."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(seed)
    nodes: list[Any] = []
    inits: list[Any] = []
    count = [0]

    def name(prefix: str) -> str:
        count[0] += 1
        return f"{prefix}{count[0]}"

    def weight(*shape: int, scale: float | None = None) -> str:
        n = name("w")
        fan_in = int(np.prod(shape[1:])) if len(shape) > 1 else 1
        std = scale if scale is not None else (2.0 / fan_in) ** 0.5
        inits.append(numpy_helper.from_array(rng.normal(0.0, std, shape).astype(np.float32), n))
        return n

    def node(op: str, inputs: list[str], **attrs: Any) -> str:
        out = name(op.lower())
        nodes.append(helper.make_node(op, inputs, [out], **attrs))
        return out

    def conv_bn(x: str, cin: int, cout: int, k: int = 3, stride: int = 1) -> str:
        y = node("Conv", [x, weight(cout, cin, k, k)], pads=[k // 2] * 4, strides=[stride, stride])
        gamma, beta = weight(cout, scale=0.1), weight(cout, scale=0.1)
        mean, var = weight(cout, scale=0.1), name("var")
        inits.append(numpy_helper.from_array(rng.uniform(0.5, 1.5, cout).astype(np.float32), var))
        return node("BatchNormalization", [y, gamma, beta, mean, var])

    def block(x: str, cin: int, cout: int, stride: int) -> str:
        y = node("Relu", [conv_bn(x, cin, cout, stride=stride)])
        y = conv_bn(y, cout, cout)
        skip = x if cin == cout and stride == 1 else conv_bn(x, cin, cout, k=1, stride=stride)
        return node("Relu", [node("Add", [y, skip])])

    x = node("Relu", [conv_bn("x", 3, 32)])
    x = node("MaxPool", [x], kernel_shape=[2, 2], strides=[2, 2])
    x = block(block(x, 32, 32, 1), 32, 32, 1)
    x = block(block(x, 32, 64, 2), 64, 128, 2)
    x = node("Flatten", [node("GlobalAveragePool", [x])])
    nodes.append(helper.make_node("Gemm", [x, weight(10, 128), weight(10, scale=0.1)], ["logits"], transB=1))
    graph = helper.make_graph(
        nodes,
        "resnet_like",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3, 64, 64])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["N", 10])],
        inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8  # opset 17's IR version: older onnxruntime builds refuse the newest IR
    onnx.checker.check_model(model)
    return model.SerializeToString()


def _blas_threads() -> int:
    try:
        from threadpoolctl import threadpool_info

        counts = [int(p["num_threads"]) for p in threadpool_info() if p.get("user_api") == "blas"]
        if counts:
            return max(counts)
    except ImportError:
        pass
    return os.cpu_count() or 1


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--devices", default="cpu", help="comma list of burn devices (cpu, wgpu, cuda)")
    ap.add_argument("--batches", default="1,32", help="comma list of batch sizes")
    ap.add_argument("--min-time", type=float, default=1.0, help="seconds to time each case")
    ap.add_argument("--runs", type=int, default=1, help="time each case this many times (medians reported)")
    ap.add_argument("--no-optimize", action="store_true", help="load with burn_onnx.load(optimize=False)")
    ap.add_argument("--out", help="also write the JSON here")
    args = ap.parse_args()

    import burn
    import burn_onnx
    import onnxruntime as ort

    data = resnet_like()
    threads = _blas_threads()
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = threads
    session = ort.InferenceSession(data, opts, providers=["CPUExecutionProvider"])
    result: dict[str, Any] = {
        "env": {
            "python": platform.python_version(),
            "burn": burn.__version__,
            "onnxruntime": ort.__version__,
            "threads": threads,
            "machine": platform.machine(),
        },
        "model": "resnet-like, input (N, 3, 64, 64), 11 convs, opset 17",
        "cases": [],
    }
    rng = np.random.default_rng(1)
    for batch in (int(b) for b in args.batches.split(",")):
        x = rng.standard_normal((batch, 3, 64, 64)).astype(np.float32)
        (reference,) = session.run(None, {"x": x})
        for name in args.devices.split(","):
            case: dict[str, Any] = {"batch": batch, "device": name, "optimize": not args.no_optimize}
            try:
                dev = burn.device(name)
                model = burn_onnx.load(data, device=dev, optimize=not args.no_optimize)
                xt = burn.tensor(x, device=dev)
                runs = []
                for _ in range(max(1, args.runs)):
                    ort_s = time_for(lambda x=x: session.run(None, {"x": x}), lambda: None, args.min_time)
                    burn_s = time_for(lambda m=model, t=xt: m(t), dev.backend.sync, args.min_time)
                    runs.append(
                        {
                            "burn_ms": round(burn_s * 1e3, 3),
                            "onnxruntime_cpu_ms": round(ort_s * 1e3, 3),
                            "burn_vs_onnxruntime": round(burn_s / ort_s, 3),
                        }
                    )
                got = model(xt).numpy()
                case.update(
                    onnxruntime_cpu_ms=round(float(np.median([r["onnxruntime_cpu_ms"] for r in runs])), 3),
                    burn_ms=round(float(np.median([r["burn_ms"] for r in runs])), 3),
                    burn_vs_onnxruntime=round(float(np.median([r["burn_vs_onnxruntime"] for r in runs])), 3),
                    max_abs_diff=float(np.abs(got - reference).max()),
                )
                if len(runs) > 1:
                    case["runs"] = runs
            except Exception as exc:  # a device that cannot run here is recorded, not fatal
                case["skipped"] = f"{type(exc).__name__}: {exc}"
            result["cases"].append(case)
    emit_json(result, args.out)


if __name__ == "__main__":
    main()
