"""Convolutions through cuDNN (and the plan cache ``_cudnn_sdpa`` shares), by NVIDIA's cuDNN frontend (the ``burn-cuda[cudnn]`` extra).

CuPy 14 ships no cuDNN bindings, so burn-cuda reaches cuDNN through ``nvidia-cudnn-frontend`` (its
Python graph API, over the cuDNN runtime wheel ``nvidia-cudnn-cu13`` that PyTorch also uses). Each
distinct convolution (kind, shapes, stride, padding, dilation, dtype, precision) is built once as a
one-node cuDNN graph (heuristics mode A, then the fallback list), kept, and executed on the backend's
stream with raw device pointers, so it is captured into CUDA graphs like burn's own kernels. Three
kinds: ``fprop`` (the forward), ``dgrad`` (the input gradient, which is also a transposed
convolution) and ``wgrad`` (the weight gradient).

Precision: float32 convolutions are strict fp32 unless the matmul precision
(``burn_cuda.set_matmul_precision``) allows tensor cores: in ``"fp32"`` mode every engine that cuDNN
marks as using tensor cores (TF32) is removed from the candidates before a plan is built, so strict
fp32 never silently runs TF32. float16 computes in float32 (tensor cores). Other dtypes, and any
convolution cuDNN has no engine for, return None: the caller runs burn's own kernels.

``BURN_CUDNN=0`` turns it off; without the extra installed it is off and nothing changes.
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from typing import Any

import numpy as np

from ._matmul import get_matmul_precision
from ._types import Prim

Ints = tuple[int, ...]
_MAX_PLANS = 512  # distinct convolutions kept built per process (least recently used dropped first)
_lock = threading.Lock()
_state: dict[str, Any] = {}
_plans: OrderedDict[tuple[Any, ...], Any] = OrderedDict()


def frontend() -> Any:
    """The ``cudnn`` frontend module, or None where it is not installed, cannot load its library, or
    ``BURN_CUDNN=0``. Imported once, on the first convolution."""
    if "module" not in _state:
        module = None
        if os.environ.get("BURN_CUDNN", "1").strip() != "0":
            try:
                import cudnn

                cudnn.backend_version()  # loads libcudnn: a missing runtime fails here, not mid-step
                module = cudnn
            except Exception as exc:  # not installed, or its runtime library is missing
                _state["why"] = f"{type(exc).__name__}: {exc}"
        _state["module"] = module
    return _state["module"]


def cudnn_status() -> str:
    """Whether burn-cuda's convolutions run through cuDNN: its version, or why not (the extra not
    installed, its library missing, ``BURN_CUDNN=0``).

    >>> import burn_cuda
    >>> burn_cuda.cudnn_status().startswith("cuDNN")
    True
    """
    cudnn = frontend()
    if cudnn is None:
        off = os.environ.get("BURN_CUDNN", "").strip() == "0"
        why = "BURN_CUDNN=0" if off else _state.get("why", "not installed")
        return f"cuDNN off ({why}): convolutions run burn's own kernels"
    return f"cuDNN {cudnn.backend_version()} (cudnn-frontend {cudnn.__version__}): convolutions run there"


class _Handle:
    """A cuDNN handle of one device, pointed at the stream it was last used with."""

    def __init__(self, cudnn: Any) -> None:
        self.handle = cudnn.create_handle()
        self.stream = 0

    def on(self, cudnn: Any, stream_ptr: int) -> Any:
        if stream_ptr != self.stream:
            cudnn.set_stream(handle=self.handle, stream=stream_ptr)
            self.stream = stream_ptr
        return self.handle


def _handle(cudnn: Any, device_id: int, stream_ptr: int) -> Any:
    handles = _state.setdefault("handles", {})
    h = handles.get(device_id)
    if h is None:
        h = handles[device_id] = _Handle(cudnn)
    return h.on(cudnn, stream_ptr)


def dense_strides(shape: Ints) -> list[int]:
    out = [1] * len(shape)
    for i in range(len(shape) - 2, -1, -1):
        out[i] = out[i + 1] * shape[i + 1]
    return out


def cached_plan(cudnn: Any, backend: Any, key: tuple[Any, ...], build: Any) -> tuple[Any, Any]:
    """(the cuDNN handle on ``backend``'s stream, the plan under ``key`` on the current device), the
    plan built by ``build(cudnn, handle, key)`` at its first use (None: cuDNN has no engine for it) and
    kept, least recently used dropped first beyond ``_MAX_PLANS``."""
    device = backend.xp.cuda.Device().id
    handle = _handle(cudnn, device, backend.stream.ptr)
    full = (device, *key)
    with _lock:
        if full in _plans:
            _plans.move_to_end(full)
            return handle, _plans[full]
        plan = _plans[full] = build(cudnn, handle, key)
        if len(_plans) > _MAX_PLANS:
            _plans.popitem(last=False)
    return handle, plan


def workspace(cp: Any, nbytes: int) -> Any:
    """A scratch buffer of ``nbytes`` for one graph execution (None when none is needed)."""
    return cp.empty(nbytes, dtype=np.uint8) if nbytes else None


class _Plan:
    """One built cuDNN graph: its two input tensors, its output tensor and its workspace size."""

    __slots__ = ("graph", "a", "b", "out", "workspace")

    def __init__(self, graph: Any, a: Any, b: Any, out: Any) -> None:
        self.graph, self.a, self.b, self.out = graph, a, b, out
        self.workspace = int(graph.get_workspace_size())


def _build(cudnn: Any, handle: Any, key: tuple[Any, ...]) -> _Plan | None:
    kind, dtype, a_shape, b_shape, out_shape, stride, padding, dilation, tensor_cores = key
    io = cudnn.data_type.HALF if dtype == np.float16 else cudnn.data_type.FLOAT
    graph = cudnn.pygraph(
        io_data_type=io,
        intermediate_data_type=cudnn.data_type.FLOAT,
        compute_data_type=cudnn.data_type.FLOAT,
        handle=handle,
    )
    a = graph.tensor(name="a", dim=list(a_shape), stride=dense_strides(a_shape), data_type=io)
    b = graph.tensor(name="b", dim=list(b_shape), stride=dense_strides(b_shape), data_type=io)
    conv = {"padding": list(padding), "stride": list(stride), "dilation": list(dilation)}
    if kind == "fprop":
        out = graph.conv_fprop(image=a, weight=b, **conv)
    elif kind == "dgrad":
        out = graph.conv_dgrad(loss=a, filter=b, **conv)
    else:
        out = graph.conv_wgrad(image=a, loss=b, **conv)
    out.set_output(True).set_dim(list(out_shape)).set_stride(dense_strides(out_shape)).set_data_type(io)
    try:
        graph.validate()
        graph.build_operation_graph()
        graph.create_execution_plans([cudnn.heur_mode.A, cudnn.heur_mode.FALLBACK])
        if not tensor_cores:
            graph.deselect_numeric_notes([cudnn.numerical_note.TENSOR_CORE])
        graph.check_support()
        graph.build_plans(cudnn.build_plan_policy.HEURISTICS_CHOICE)
    except Exception:  # no engine for this case (or for strict fp32 here): burn's kernels run it
        return None
    return _Plan(graph, a, b, out)


def _run(
    backend: Any,
    kind: str,
    a: Prim,
    b: Prim,
    out_shape: Ints,
    stride: Ints,
    padding: Ints,
    dilation: Ints,
) -> Prim | None:
    """Run one convolution kind on C-contiguous copies of ``a`` and ``b`` into a new (out_shape) array;
    None when cuDNN is off or has no plan for it."""
    cudnn = frontend()
    if cudnn is None or a.dtype not in (np.float32, np.float16) or b.dtype != a.dtype:
        return None
    if 0 in a.shape or 0 in b.shape or 0 in out_shape:
        return None
    cp = backend.xp
    tensor_cores = a.dtype == np.float16 or get_matmul_precision() != "fp32"
    key = (kind, a.dtype.type, a.shape, b.shape, tuple(out_shape), stride, padding, dilation, tensor_cores)
    handle, plan = cached_plan(cudnn, backend, key, _build)
    if plan is None:
        return None
    a, b = cp.ascontiguousarray(a), cp.ascontiguousarray(b)
    out = cp.empty(out_shape, dtype=a.dtype)
    work = workspace(cp, plan.workspace)
    pack = {plan.a: a.data.ptr, plan.b: b.data.ptr, plan.out: out.data.ptr}
    plan.graph.execute(pack, 0 if work is None else work.data.ptr, handle=handle)
    return out


def _as_2d(nd: int, *shapes: Ints) -> list[Ints]:
    """1-d shapes (N, C, L) as 2-d ones of height 1 (cuDNN takes 2-d and 3-d convolutions)."""
    return [s[:2] + (1,) + s[2:] for s in shapes] if nd == 1 else list(shapes)


def _params(stride: Ints, padding: Ints, dilation: Ints) -> tuple[Ints, Ints, Ints]:
    if len(stride) == 1:
        return (1, stride[0]), (0, padding[0]), (1, dilation[0])
    return stride, padding, dilation


def _convolve(
    backend: Any, kind: str, a: Prim, b: Prim, out_shape: Ints, stride: Ints, padding: Ints, dilation: Ints
) -> Prim | None:
    nd = len(stride)
    sa, sb, so = _as_2d(nd, a.shape, b.shape, out_shape)
    out = _run(backend, kind, a.reshape(sa), b.reshape(sb), so, *_params(stride, padding, dilation))
    return None if out is None else out.reshape(out_shape)


def fprop(
    backend: Any, x: Prim, weight: Prim, out_shape: Ints, stride: Ints, padding: Ints, dilation: Ints
) -> Prim | None:
    """conv(x, weight) without bias: x (N, C, *S), weight (C_out, C // groups, *K), 1-3 spatial dims."""
    return _convolve(backend, "fprop", x, weight, out_shape, stride, padding, dilation)


def dgrad(
    backend: Any, grad: Prim, weight: Prim, in_shape: Ints, stride: Ints, padding: Ints, dilation: Ints
) -> Prim | None:
    """The input gradient of conv(x, weight) for the output gradient ``grad``: an (in_shape) array. It
    is also the transposed convolution of ``grad`` by ``weight`` (read as (C_in, C_out // groups, *K))."""
    return _convolve(backend, "dgrad", grad, weight, in_shape, stride, padding, dilation)


def wgrad(
    backend: Any, x: Prim, grad: Prim, w_shape: Ints, stride: Ints, padding: Ints, dilation: Ints
) -> Prim | None:
    """The weight gradient of conv(x, weight) for the output gradient ``grad``: a (w_shape) array."""
    return _convolve(backend, "wgrad", x, grad, w_shape, stride, padding, dilation)
