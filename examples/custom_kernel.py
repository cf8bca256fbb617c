"""A custom fused op with its own kernels: linear + bias + ReLU as one kernel on every backend.

    python examples/custom_kernel.py --device cpu     # numpy function
    python examples/custom_kernel.py --device wgpu    # two WGSL kernels, autotuned
    python examples/custom_kernel.py --device cuda    # two CUDA C kernels (cupy.RawKernel), autotuned

``fused_linear_relu(x, w, b) = relu(x @ w + b)`` (x: (M, K), w: (K, N) as burn's Linear stores it,
b: (N,)) is defined once with ``burn.custom.op``: its numpy function, WGSL and CUDA C kernels, the
unfused burn ops it equals (``compose``) and its backward. The script checks the backward against
finite differences, compares forward and gradients with the unfused ops on the device, runs an Adam
training step through the op and through the unfused ops from the same weights, times both, prints one
JSON line, and exits 0 when every difference is within tolerance (1 otherwise).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from typing import Any

import burn
import numpy as np
from burn import nn
from burn.custom import Cuda, Wgsl

# ---------------------------------------------------------------- the kernels
# WGSL, bound as burn-wgpu's own kernels: binding 0 the parameter words, 1 the output, 2.. the inputs
_WGSL_HEAD = """
@group(0) @binding(0) var<storage, read> info: array<u32>;  // M, K, N
@group(0) @binding(1) var<storage, read_write> y: array<f32>;
@group(0) @binding(2) var<storage, read> x: array<f32>;
@group(0) @binding(3) var<storage, read> w: array<f32>;
@group(0) @binding(4) var<storage, read> b: array<f32>;
"""

WGSL_ONE = (
    _WGSL_HEAD
    + """
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = gid.x + gid.y * nwg.x * 64u;  // one output per invocation
    let m = info[0]; let k = info[1]; let n = info[2];
    if (i >= m * n) { return; }
    let row = i / n;
    let col = i % n;
    var acc = 0.0;
    for (var j = 0u; j < k; j = j + 1u) { acc = acc + x[row * k + j] * w[j * n + col]; }
    y[i] = max(acc + b[col], 0.0);
}
"""
)

WGSL_FOUR = (
    _WGSL_HEAD
    + """
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let t = gid.x + gid.y * nwg.x * 64u;  // four neighbouring outputs of a row per invocation
    let m = info[0]; let k = info[1]; let n = info[2];
    let quads = (n + 3u) / 4u;
    if (t >= m * quads) { return; }
    let row = t / quads;
    let c0 = (t % quads) * 4u;
    var acc = vec4<f32>(0.0);
    for (var j = 0u; j < k; j = j + 1u) {
        let a = x[row * k + j];
        for (var c = 0u; c < 4u; c = c + 1u) {
            if (c0 + c < n) { acc[c] = acc[c] + a * w[j * n + c0 + c]; }
        }
    }
    for (var c = 0u; c < 4u; c = c + 1u) {
        if (c0 + c < n) { y[row * n + c0 + c] = max(acc[c] + b[c0 + c], 0.0); }
    }
}
"""
)

# CUDA C for cupy.RawKernel, launched as burn-cuda's kernels: inputs, output, then the scalars
CUDA_ONE = r"""
extern "C" __global__ void fused_linear_relu(
    const float* x, const float* w, const float* b, float* y, int M, int K, int N) {
    long long i = (long long)(blockIdx.y * gridDim.x + blockIdx.x) * blockDim.x + threadIdx.x;
    if (i >= (long long)M * N) return;
    int row = (int)(i / N), col = (int)(i % N);
    float acc = 0.0f;
    for (int k = 0; k < K; ++k) acc += x[(long long)row * K + k] * w[(long long)k * N + col];
    y[i] = fmaxf(acc + b[col], 0.0f);
}
"""

CUDA_TILED = r"""
#define TILE 16
extern "C" __global__ void fused_linear_relu_tiled(
    const float* x, const float* w, const float* b, float* y, int M, int K, int N) {
    __shared__ float xs[TILE][TILE];
    __shared__ float ws[TILE][TILE + 1];
    int row = blockIdx.y * TILE + threadIdx.y, col = blockIdx.x * TILE + threadIdx.x;
    float acc = 0.0f;
    for (int k0 = 0; k0 < K; k0 += TILE) {
        int kx = k0 + threadIdx.x, kw = k0 + threadIdx.y;
        xs[threadIdx.y][threadIdx.x] = (row < M && kx < K) ? x[(long long)row * K + kx] : 0.0f;
        ws[threadIdx.y][threadIdx.x] = (kw < K && col < N) ? w[(long long)kw * N + col] : 0.0f;
        __syncthreads();
        for (int k = 0; k < TILE; ++k) acc += xs[threadIdx.y][k] * ws[k][threadIdx.x];
        __syncthreads();
    }
    if (row < M && col < N) y[(long long)row * N + col] = fmaxf(acc + b[col], 0.0f);
}
"""


def _mkn(c: burn.custom.Launch) -> tuple[int, int, int]:
    (m, k), (_, n) = c.shapes[0], c.shapes[1]
    return m, k, n


F32 = (burn.float32,)
KERNELS: dict[str, Any] = {
    "cpu": lambda x, w, b: np.maximum(x @ w + b, 0).astype(x.dtype),
    "wgpu": [
        Wgsl(WGSL_ONE, params=_mkn, name="one", dtypes=F32),
        Wgsl(
            WGSL_FOUR,
            params=_mkn,
            grid=lambda c: burn.custom.spread(-(-c.shape[0] * -(-c.shape[1] // 4) // 64)),
            name="four",
            dtypes=F32,
        ),
    ],
    "cuda": [
        Cuda(CUDA_ONE, "fused_linear_relu", params=_mkn, name="one", dtypes=F32),
        Cuda(
            CUDA_TILED,
            "fused_linear_relu_tiled",
            params=_mkn,
            grid=lambda c: (-(-c.shape[1] // 16), -(-c.shape[0] // 16), 1),
            block=(16, 16, 1),
            name="tiled",
            dtypes=F32,
        ),
    ],
}


def unfused(x: burn.Tensor, w: burn.Tensor, b: burn.Tensor) -> burn.Tensor:
    """The op as burn's own ops: what the kernels must equal."""
    return (x @ w + b).relu()


def backward(ctx: burn.custom.BackwardCtx, grad: burn.Tensor) -> list[burn.Tensor | None]:
    """relu'(z) from the output (y > 0), then the linear layer's three gradients."""
    x, w, _ = ctx.inputs
    gz = grad * (ctx.output > 0).cast(grad.dtype)
    return [gz @ w.transpose(0, 1), x.transpose(0, 1) @ gz, gz.sum(0)]


fused_linear_relu = burn.custom.op(
    "fused_linear_relu",
    shape=lambda x, w, b: (x[0], w[1]),
    kernels=KERNELS,
    compose=unfused,
    backward=backward,
    arity=3,
)


# ---------------------------------------------------------------- a model through the op
class Mlp(nn.Module):
    """fc2(relu(fc1(x))), the first layer through ``fused_linear_relu`` or the unfused ops."""

    def __init__(self, d_in: int, d_hidden: int, d_out: int, device: Any) -> None:
        self.fc1 = nn.LinearConfig(d_in, d_hidden).init(device)
        self.fc2 = nn.LinearConfig(d_hidden, d_out).init(device)

    def forward(self, x: burn.Tensor, fused: bool = True) -> burn.Tensor:
        w, b = self.fc1.weight.val(), self.fc1.bias.val()
        h = fused_linear_relu(x, w, b) if fused else unfused(x, w, b)
        return self.fc2(h)


def train_mlp(device: Any, steps: int, seed: int = 0) -> list[float]:
    """``steps`` Adam steps of an 8-16-3 ``Mlp`` (through the op) on one fixed random batch: the losses."""
    burn.seed(seed)
    rng = np.random.default_rng(seed)
    model = Mlp(8, 16, 3, device)
    opt = burn.optim.AdamConfig().init()
    x = burn.tensor(rng.standard_normal((12, 8)).astype(np.float32), device=device)
    y = burn.tensor(rng.standard_normal((12, 3)).astype(np.float32), device=device)
    losses = []
    for _ in range(steps):
        loss = burn.nn.functional.mse_loss(model(x), y)
        model = opt.step(1e-2, model, loss.backward())
        losses.append(loss.item())
    return losses


def _max_diff(a: burn.Tensor | np.ndarray, b: burn.Tensor | np.ndarray) -> float:
    a = a.numpy() if isinstance(a, burn.Tensor) else a
    b = b.numpy() if isinstance(b, burn.Tensor) else b
    return float(np.abs(np.asarray(a, np.float64) - np.asarray(b, np.float64)).max())


def _median_ms(fn: Any, sync: Any, reps: int) -> float:
    fn()
    sync()
    times = []
    for _ in range(reps):
        start = time.perf_counter()
        fn()
        sync()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e3


def run(device: str, m: int, k: int, n: int, reps: int, seed: int = 0) -> dict[str, Any]:
    """Every check and timing on ``device``: the figures the script prints."""
    burn.seed(seed)
    rng = np.random.default_rng(seed)
    dev = burn.device(device)
    adev = burn.device(device, autodiff=True)
    sync = dev.backend.sync
    report: dict[str, Any] = {"device": str(dev), "shape": [m, k, n]}

    # the backward against finite differences (float64 on the numpy backend)
    small = [rng.standard_normal(s) for s in ((3, 4), (4, 5), (5,))]
    report["check_grad_max_err"] = max(
        e or 0.0 for e in burn.custom.check_grad(fused_linear_relu, *small).max_abs_err
    )

    # forward: the kernel against the unfused ops on the device, and against numpy
    xn = rng.standard_normal((m, k)).astype(np.float32)
    wn = (rng.standard_normal((k, n)) / np.sqrt(k)).astype(np.float32)
    bn = rng.standard_normal(n).astype(np.float32)
    x, w, b = (burn.tensor(a, device=dev) for a in (xn, wn, bn))
    y = fused_linear_relu(x, w, b)
    scale = max(1.0, float(np.abs(xn @ wn + bn).max()))
    report["forward_max_diff_vs_unfused"] = _max_diff(y, unfused(x, w, b)) / scale
    report["forward_max_diff_vs_numpy"] = _max_diff(y, np.maximum(xn @ wn + bn, 0)) / scale

    # gradients: through the op's backward against autodiff of the unfused ops
    grads = {}
    for name, fn in (("fused", fused_linear_relu), ("unfused", unfused)):
        ts = [burn.tensor(a, device=adev).require_grad() for a in (xn, wn, bn)]
        g = (fn(*ts) * 0.5).sum().backward()
        grads[name] = [t.grad(g) for t in ts]
    report["grad_max_diff"] = max(_max_diff(a, c) / scale for a, c in zip(grads["fused"], grads["unfused"]))

    # one Adam step through each form from the same weights
    model = Mlp(k, n, 10, adev)
    twin = model.clone()
    target = burn.tensor(rng.standard_normal((m, 10)).astype(np.float32), device=adev)
    xa = burn.tensor(xn, device=adev)
    losses, params = {}, {}
    for name, net, fused in (("fused", model, True), ("unfused", twin, False)):
        opt = burn.optim.AdamConfig().init()
        loss = burn.nn.functional.mse_loss(net(xa, fused), target)
        net = opt.step(1e-2, net, loss.backward())
        losses[name] = loss.item()
        params[name] = net.fc1.weight.val()
    report["train_loss"] = losses["fused"]
    report["train_loss_diff"] = abs(losses["fused"] - losses["unfused"])
    report["train_param_max_diff"] = _max_diff(params["fused"], params["unfused"])

    # speed: forward, and forward + backward, of the fused op against the unfused ops
    timings = {}
    for name, fn in (("fused", fused_linear_relu), ("unfused", unfused)):
        timings[f"{name}_forward_ms"] = _median_ms(lambda fn=fn: fn(x, w, b), sync, reps)
        ts = [burn.tensor(a, device=adev).require_grad() for a in (xn, wn, bn)]
        timings[f"{name}_fwd_bwd_ms"] = _median_ms(lambda fn=fn, ts=ts: fn(*ts).sum().backward(), sync, reps)
    report.update({key: round(v, 3) for key, v in timings.items()})
    report["forward_speedup"] = round(timings["unfused_forward_ms"] / timings["fused_forward_ms"], 3)
    return report


TOLERANCES = {
    "check_grad_max_err": 1e-6,
    "forward_max_diff_vs_unfused": 1e-4,
    "forward_max_diff_vs_numpy": 1e-4,
    "grad_max_diff": 1e-4,
    "train_loss_diff": 1e-4,
    "train_param_max_diff": 1e-4,
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", default="cpu", help="cpu, wgpu or cuda (default cpu)")
    parser.add_argument(
        "--size", default="256x512x256", help="MxKxN of x (M, K) @ w (K, N) (default 256x512x256)"
    )
    parser.add_argument("--reps", type=int, default=10, help="timed runs per figure (default 10)")
    args = parser.parse_args(argv)
    try:
        m, k, n = (int(v) for v in args.size.lower().split("x"))
    except ValueError:
        parser.error(f"--size: expected MxKxN such as 256x512x256, got {args.size!r}")
    report = run(args.device, m, k, n, args.reps)
    failed = [key for key, tol in TOLERANCES.items() if not report[key] <= tol]
    report["agree"] = not failed
    print(json.dumps(report))
    if failed:
        print(f"custom_kernel: beyond tolerance: {', '.join(failed)}", file=sys.stderr)
    return 0 if not failed else 1


if __name__ == "__main__":
    sys.exit(main())
