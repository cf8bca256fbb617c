"""float16 / bfloat16 attention through cuDNN's flash attention (the ``burn-cuda[cudnn]`` extra).

cuDNN's SDPA graphs (``graph.sdpa`` with its softmax stats, ``graph.sdpa_backward``) run on tensor
cores with float32 softmax and accumulation. Their stats are the natural-log row log-sum-exp of the
scaled scores, the ``lse`` burn's attention contract passes from the forward to the backward, so a
forward run by burn's kernels and a backward run here (or the other way round) agree. Taken: q, k, v
of one 16-bit float dtype, head dims multiples of 8 up to 128, no mask or the causal (top-left)
triangle, any (batch, head, row) strides with unit column stride. Anything else (float32, bool or
float masks) is declined (False) and burn's kernels (``_attention``) run it. The caller allocates the
outputs in the layout it wants (cuDNN writes through their strides). Each distinct call (shapes,
strides, dtype, causal, scale) is built once, like the convolutions of ``_cudnn``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from . import _cudnn
from ._types import Prim

_MAX_HEAD = 128


def _io(cudnn: Any, dtype: str) -> Any:
    return cudnn.data_type.BFLOAT16 if dtype == "bfloat16" else cudnn.data_type.HALF


def _dtype(x: Prim) -> str | None:
    if x.dtype.kind == "V":
        return "bfloat16"
    return "float16" if x.dtype == np.float16 else None


def _elems(x: Prim) -> tuple[int, ...]:
    return tuple(st // x.itemsize for st in x.strides)


class _Sdpa:
    """One built SDPA graph and its tensors by role."""

    __slots__ = ("graph", "t", "workspace")

    def __init__(self, graph: Any, tensors: dict[str, Any]) -> None:
        self.graph, self.t = graph, tensors
        self.workspace = int(graph.get_workspace_size())


def _causal(cudnn: Any, causal: bool) -> dict[str, Any]:
    if not causal:
        return {}
    return {"diagonal_alignment": cudnn.diagonal_alignment.TOP_LEFT, "diagonal_band_right_bound": 0}


def _tensor(graph: Any, name: str, shape: tuple[int, ...], strides: tuple[int, ...], dtype: Any) -> Any:
    return graph.tensor(name=name, dim=list(shape), stride=list(strides), data_type=dtype)


def _output(t: Any, shape: tuple[int, ...], strides: tuple[int, ...], dtype: Any) -> None:
    t.set_output(True).set_dim(list(shape)).set_stride(list(strides)).set_data_type(dtype)


def _build(cudnn: Any, handle: Any, key: tuple[Any, ...]) -> _Sdpa | None:
    kind, dtype, layout, causal, scale = key
    io, f32 = _io(cudnn, dtype), cudnn.data_type.FLOAT
    graph = cudnn.pygraph(io_data_type=io, intermediate_data_type=f32, compute_data_type=f32, handle=handle)
    shape, strides = {n: sh for n, sh, _ in layout}, {n: st for n, _, st in layout}
    t: dict[str, Any] = {}
    try:
        for name in ("q", "k", "v") if kind == "fwd" else ("q", "k", "v", "o", "g", "lse"):
            t[name] = _tensor(graph, name, shape[name], strides[name], f32 if name == "lse" else io)
        if kind == "fwd":
            t["o"], t["lse"] = graph.sdpa(
                q=t["q"],
                k=t["k"],
                v=t["v"],
                attn_scale=float(scale),
                generate_stats=True,
                **_causal(cudnn, causal),
            )
            _output(t["o"], shape["o"], strides["o"], io)
            _output(t["lse"], shape["lse"], strides["lse"], f32)
        else:
            t["dq"], t["dk"], t["dv"] = graph.sdpa_backward(
                q=t["q"],
                k=t["k"],
                v=t["v"],
                o=t["o"],
                dO=t["g"],
                stats=t["lse"],
                attn_scale=float(scale),
                **_causal(cudnn, causal),
            )
            for name in ("dq", "dk", "dv"):
                _output(t[name], shape[name], strides[name], io)
        graph.validate()
        graph.build_operation_graph()
        graph.create_execution_plans([cudnn.heur_mode.A, cudnn.heur_mode.FALLBACK])
        graph.check_support()
        graph.build_plans(cudnn.build_plan_policy.HEURISTICS_CHOICE)
    except Exception:  # no engine for this call: burn's kernels run it
        return None
    return _Sdpa(graph, t)


def _run(
    backend: Any, kind: str, causal: bool, scale: float, mask: Prim | None, arrays: dict[str, Prim]
) -> bool:
    """Run the ``kind`` graph over ``arrays`` (by role); False where cuDNN does not take the call."""
    cudnn = _cudnn.frontend()
    q, v = arrays["q"], arrays["v"]
    dtype = _dtype(q)
    if cudnn is None or dtype is None or mask is not None:
        return False
    e, ev = q.shape[3], v.shape[3]
    if e % 8 or ev % 8 or e > _MAX_HEAD or ev > _MAX_HEAD:
        return False
    shaped = {n: x.reshape(x.shape + (1,)) if n == "lse" else x for n, x in arrays.items()}
    layout = tuple(sorted((n, x.shape, _elems(x)) for n, x in shaped.items()))
    key = ("sdpa_" + kind, dtype, layout, causal, scale)
    handle, plan = _cudnn.cached_plan(cudnn, backend, key, lambda c, h, k: _build(c, h, (kind, *k[1:])))
    if plan is None:
        return False
    work = _cudnn.workspace(backend.xp, plan.workspace)
    pack = {plan.t[name]: x.data.ptr for name, x in arrays.items()}
    plan.graph.execute(pack, 0 if work is None else work.data.ptr, handle=handle)
    return True


def forward(
    backend: Any,
    q: Prim,
    k: Prim,
    v: Prim,
    mask: Prim | None,
    causal: bool,
    scale: float,
    out: Prim,
    lse: Prim,
) -> bool:
    """Fill ``out`` and ``lse`` through cuDNN; False (nothing written) where it does not take the call."""
    return _run(backend, "fwd", causal, scale, mask, {"q": q, "k": k, "v": v, "o": out, "lse": lse})


def backward(
    backend: Any,
    q: Prim,
    k: Prim,
    v: Prim,
    mask: Prim | None,
    causal: bool,
    scale: float,
    out: Prim,
    lse: Prim,
    grad: Prim,
    grads: tuple[Prim, Prim, Prim],
) -> bool:
    """Fill ``grads`` (dq, dk, dv) through cuDNN; False (nothing written) where it does not take it."""
    arrays = {"q": q, "k": k, "v": v, "o": out, "g": grad, "lse": lse}
    arrays.update(zip(("dq", "dk", "dv"), grads))
    return _run(backend, "bwd", causal, scale, mask, arrays)
