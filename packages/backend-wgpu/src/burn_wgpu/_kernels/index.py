"""Indexing kernels: gather (also select, through a strided index view) and scatter-add (also
select_add). Negative indices count from the end; out-of-range indices read or write a clamped
address (WebGPU's robust buffer access) instead of faulting.

Scatter-add accumulates duplicates with atomics: ``atomicAdd`` for i32/u32 and a compare-exchange loop
on the f32 bit pattern for f32 (WGSL has no float atomics).
"""

from __future__ import annotations

from functools import lru_cache

from burn import DType, float16, float32, int32

from .._dtypes import WGSL
from .._executor import Kernel
from .elementwise import WG


def _walk(nd: int, dim: int, tensors: dict[str, int], skip_dim: tuple[str, ...]) -> list[str]:
    """Index arithmetic: decompose flat ``i`` by meta shape[1..nd] into each tensor's offset."""
    body = ["var r = i;"] + [f"var o_{t} = info[{at + nd}u];" for t, at in tensors.items()]
    for d in range(nd - 1, -1, -1):
        body.append(f"let c{d} = r % info[{1 + d}u];")
        if d:
            body.append(f"r = r / info[{1 + d}u];")
        for t, at in tensors.items():
            if not (d == dim and t in skip_dim):
                body.append(f"o_{t} += c{d} * info[{at + d}u];")
    return body


def _index_value(idx_dt: DType, size_at: int) -> list[str]:
    if idx_dt is int32:
        return ["var k = idx[o_idx];", f"if (k < 0) {{ k += i32(info[{size_at}u]); }}", "let ku = u32(k);"]
    return ["let ku = idx[o_idx];"]


def _main(body: list[str]) -> str:
    return (
        f"@compute @workgroup_size({WG})\n"
        "fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {\n"
        f"    let i = gid.x + gid.y * (nwg.x * {WG}u);\n"
        "    if (i >= info[0]) { return; }\n" + "\n".join(f"    {b}" for b in body) + "\n}\n"
    )


@lru_cache(maxsize=256)
def render_gather(dtype: DType, idx_dt: DType, nd: int, dim: int) -> Kernel:
    """``out[c] = x[c with c[dim] = idx[c]]`` over the output shape. Metadata: numel, shape[nd],
    x strides[nd] + offset, idx strides[nd] + offset, size of x along dim."""
    x_at, idx_at = 1 + nd, 1 + nd + (nd + 1)
    size_at = idx_at + nd + 1
    body = _walk(nd, dim, {"x": x_at, "idx": idx_at}, ("x",))
    body += _index_value(idx_dt, size_at)
    body.append(f"out[i] = x[o_x + ku * info[{x_at + dim}u]];")
    src = ("enable f16;\n" if dtype is float16 else "") + "\n".join(
        [
            "@group(0) @binding(0) var<storage, read> info: array<u32>;",
            f"@group(0) @binding(1) var<storage, read_write> out: array<{WGSL[dtype]}>;",
            f"@group(0) @binding(2) var<storage, read> x: array<{WGSL[dtype]}>;",
            f"@group(0) @binding(3) var<storage, read> idx: array<{WGSL[idx_dt]}>;",
            _main(body),
        ]
    )
    return Kernel(f"gather_{dtype.name}_{nd}d_dim{dim}", src, ("rw", "read", "read"))


_ATOMIC = {float32: "u32", int32: "i32"}


@lru_cache(maxsize=256)
def render_scatter_add(dtype: DType, idx_dt: DType, nd: int, dim: int) -> Kernel:
    """``out[c with c[dim] = idx[c]] += src[c]`` over src's shape (out already holds x). Metadata:
    numel, shape[nd], src strides[nd] + offset, idx strides[nd] + offset, out strides[nd] + offset,
    size of out along dim."""
    src_at, idx_at, out_at = 1 + nd, 1 + nd + (nd + 1), 1 + nd + 2 * (nd + 1)
    size_at = out_at + nd + 1
    body = _walk(nd, dim, {"src": src_at, "idx": idx_at, "out": out_at}, ("out",))
    body += _index_value(idx_dt, size_at)
    body.append(f"let o = o_out + ku * info[{out_at + dim}u];")
    body.append("let v = src[o_src];")
    if dtype is float32:
        body += [
            "loop {",
            "    let old = atomicLoad(&out[o]);",
            "    let upd = bitcast<u32>(bitcast<f32>(old) + v);",
            "    if (atomicCompareExchangeWeak(&out[o], old, upd).exchanged) { break; }",
            "}",
        ]
    else:
        body.append("atomicAdd(&out[o], v);")
    atomic = _ATOMIC.get(dtype, "u32")
    src = "\n".join(
        [
            "@group(0) @binding(0) var<storage, read> info: array<u32>;",
            f"@group(0) @binding(1) var<storage, read_write> out: array<atomic<{atomic}>>;",
            f"@group(0) @binding(2) var<storage, read> src: array<{WGSL[dtype]}>;",
            f"@group(0) @binding(3) var<storage, read> idx: array<{WGSL[idx_dt]}>;",
            _main(body),
        ]
    )
    return Kernel(f"scatter_add_{dtype.name}_{nd}d_dim{dim}", src, ("rw", "read", "read"))
