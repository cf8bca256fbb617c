"""int8 quantization figures, as one JSON document:

- the digits CNN (burn_train.examples.digits) trained a few epochs on cpu, then quantized with
  ``quantize_module`` (int8, symmetric, per channel): test accuracy before and after (points lost) and
  the record size ratio (float32 bytes / int8 bytes);
- the record size ratio of a larger model, a 784-1024-1024-10 MLP, where the weights outweigh the
  record's per-tensor metadata (the digits CNN has 10k weights: its metadata dominates);
- a quantized linear ``size`` x ``size`` (default 4096) at batch 64 and 1024 against the float32
  matmul of the same shapes, on cpu and on each available GPU device (wgpu, cuda): the whole layer
  (``quantized_linear``: dynamic int8 activations, int8 weights, exact integer accumulation, zero-point
  and scale corrections) and the backend's int8 product alone (``quantized_matmul``).

    python benchmarks/bench_quant.py [--epochs 4] [--batches 64,1024] [--size 4096] [--devices cpu,cuda]
        [--sizes wgpu=1024] [--out FILE]

(wgpu on a software adapter such as lavapipe takes minutes for the 4096x4096 products: ``--sizes
wgpu=1024`` runs that device at a smaller size.)
"""

from __future__ import annotations

import argparse
import time
from typing import Any

import burn
import numpy as np
from _common import emit_json, time_reps
from burn.quantization import QuantScheme, quantize_module, quantized_linear


def _accuracy(model: Any, images: np.ndarray, labels: np.ndarray) -> float:
    logits = model(burn.from_numpy(images)).numpy()
    return float((logits.argmax(1) == labels).mean() * 100)


def digits_figures(epochs: int) -> dict[str, Any]:
    from burn.data.vision import DigitsDataset, ImageClassificationBatcher
    from burn.nn import functional as F
    from burn_train.examples.digits import make_model_class

    burn.seed(0)
    batcher = ImageClassificationBatcher(mean=0.3, std=0.4)
    train, test = DigitsDataset("train"), DigitsDataset("test")
    xs, ys = batcher.batch([train[i] for i in range(len(train))], "cpu")
    tx, ty = batcher.batch([test[i] for i in range(len(test))], "cpu")
    adev = burn.device("cpu", autodiff=True)
    model = make_model_class()(adev)
    opt = burn.optim.AdamConfig().init()
    x_np, y_np = xs.numpy(), ys.numpy()
    rng = np.random.default_rng(0)
    for _ in range(epochs):
        order = rng.permutation(len(x_np))
        for start in range(0, len(order), 32):
            idx = order[start : start + 32]
            xb, yb = burn.from_numpy(x_np[idx], device=adev), burn.from_numpy(y_np[idx], device=adev)
            loss = F.cross_entropy(model(xb), yb)
            model = opt.step(2e-3, model, loss.backward())
    fmodel = model.valid()
    qmodel = quantize_module(fmodel, QuantScheme(granularity="per_channel"))
    acc_f = _accuracy(fmodel, tx.numpy(), ty.numpy())
    acc_q = _accuracy(qmodel, tx.numpy(), ty.numpy())
    size_f, size_q = len(burn.record.to_bytes(fmodel)), len(burn.record.to_bytes(qmodel))
    return {
        "epochs": epochs,
        "accuracy_float32": acc_f,
        "accuracy_int8": acc_q,
        "accuracy_delta_points": acc_f - acc_q,
        "record_bytes_float32": size_f,
        "record_bytes_int8": size_q,
        "record_size_ratio": size_f / size_q,
    }


def mlp_record_figures() -> dict[str, Any]:
    """Record sizes of a 784-1024-1024-10 MLP (1.86M weights), float32 against int8 per channel."""
    from burn import nn

    burn.seed(0)
    model = nn.Sequential(
        nn.LinearConfig(784, 1024).init(),
        nn.Relu(),
        nn.LinearConfig(1024, 1024).init(),
        nn.Relu(),
        nn.LinearConfig(1024, 10).init(),
    )
    qmodel = quantize_module(model, QuantScheme(granularity="per_channel"))
    size_f, size_q = len(burn.record.to_bytes(model)), len(burn.record.to_bytes(qmodel))
    return {
        "model": "mlp 784-1024-1024-10",
        "params": model.num_params(),
        "record_bytes_float32": size_f,
        "record_bytes_int8": size_q,
        "record_size_ratio": size_f / size_q,
    }


def linear_figures(device_name: str, batch: int, size: int = 4096, reps: int = 5) -> dict[str, Any]:
    dev = burn.device(device_name)
    b = dev.backend
    rng = np.random.default_rng(0)
    x = burn.from_numpy(rng.standard_normal((batch, size)).astype(np.float32), device=dev)
    w = burn.from_numpy((rng.standard_normal((size, size)) / 64).astype(np.float32), device=dev)
    qw = w.quantize_dynamic(QuantScheme(granularity="per_channel", axis=1))
    qx = x.quantize_dynamic(QuantScheme(mode="affine"))
    a_p, w_p = qx.int_repr().primitive, qw.int_repr().primitive
    sync = b.sync
    t_f = time_reps(lambda: x @ w, sync, reps=reps)
    t_q = time_reps(lambda: quantized_linear(x, qw), sync, reps=reps)  # weight sums cached after warm-up
    t_mm = time_reps(lambda: b.quantized_matmul(a_p, w_p), sync, reps=reps)
    err = float(np.abs(quantized_linear(x, qw).numpy() - (x @ w).numpy()).max())
    out = {
        "device": str(dev),
        "shape": [batch, size, size],
        "float32_ms": t_f * 1e3,
        "int8_layer_ms": t_q * 1e3,
        "int8_matmul_ms": t_mm * 1e3,
        "int8_layer_over_float32": t_q / t_f,
        "int8_matmul_over_float32": t_mm / t_f,
        "max_abs_err": err,
    }
    if device_name.startswith("cuda"):  # float32 on tensor cores too (TF32 inputs), for context
        import burn_cuda

        with burn_cuda.matmul_precision("tf32"):
            out["float32_tf32_ms"] = time_reps(lambda: x @ w, sync, reps=reps) * 1e3
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--epochs", type=int, default=4)
    p.add_argument("--batches", default="64,1024", help="comma-separated batch sizes of the linear")
    p.add_argument("--size", type=int, default=4096, help="the linear's input and output features")
    p.add_argument("--sizes", default="", help="per-device sizes, e.g. wgpu=1024 (software adapters)")
    p.add_argument(
        "--devices", default=None, help="comma-separated devices for the linear (default: cpu + GPUs)"
    )
    p.add_argument("--skip-digits", action="store_true", help="only the record sizes and the linear")
    p.add_argument("--out", default=None)
    args = p.parse_args()
    t0 = time.perf_counter()
    result: dict[str, Any] = {"bench": "quant"}
    if not args.skip_digits:
        result["digits_cnn"] = digits_figures(args.epochs)
    result["mlp_record"] = mlp_record_figures()
    result["linear"] = []
    names = ["cpu"] + [i.name for i in burn.backends() if i.available and i.name in ("wgpu", "cuda")]
    if args.devices:
        names = [n.strip() for n in args.devices.split(",")]
    sizes = dict(item.split("=") for item in args.sizes.split(",") if item)
    for name in names:
        for batch in (int(v) for v in args.batches.split(",")):
            try:
                result["linear"].append(linear_figures(name, batch, int(sizes.get(name, args.size))))
            except Exception as exc:  # a device that cannot run it is reported, not fatal to the others
                result["linear"].append({"device": name, "error": f"{type(exc).__name__}: {exc}"})
    result["seconds"] = time.perf_counter() - t0
    emit_json(result, args.out)


if __name__ == "__main__":
    main()
