"""Launching a ``burn.custom`` op's WGSL kernel as burn-wgpu launches its own.

Binding 0 is the metadata words (``Wgsl.params``), binding 1 the output, bindings 2.. the inputs,
each dense from element 0 (a strided or offset view is copied first). The dispatch goes through the
executor like any kernel: batched per submit, recorded into a fusion program's command list, and
logged by the page export. Several variants are tuned by the backend's tuner (``burn.autotune``).
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from burn.custom import Launch, Wgsl, dispatch

from ._executor import Kernel
from ._primitive import WgpuTensor

if TYPE_CHECKING:
    from ._backend import WgpuBackend


def pack_words(words: Sequence[int | float | bool]) -> bytes:
    """The metadata of a custom kernel: a u32 word per value (a float as its f32 bits, a negative
    int as its two's complement)."""
    fmt = "".join("f" if isinstance(w, float) else "i" if int(w) < 0 else "I" for w in words)
    return struct.pack(f"<{fmt}", *(w if isinstance(w, float) else int(w) for w in words))


def launch(backend: WgpuBackend, kernel: Any, xs: Sequence[WgpuTensor], info: Launch) -> WgpuTensor:
    """Run ``kernel`` (a ``burn.custom.Wgsl``) over ``xs`` into a new tensor of the call's shape."""
    if not isinstance(kernel, Wgsl):
        raise TypeError(f"{info.op}: the wgpu kernel must be a burn.custom.Wgsl, got {type(kernel).__name__}")
    ins = []
    for x in xs:
        dense = backend.contiguous(x)
        ins.append(dense if dense.offset == 0 else backend._copy(dense))
    out = backend.empty(info.shape, info.dtype)
    if info.numel == 0:
        return out
    label = f"custom_{info.op}" + (f"_{kernel.name}" if kernel.name else "")
    k = Kernel(label, kernel.source, ("rw",) + ("read",) * len(ins))
    meta = pack_words(kernel.words(info))
    backend.ex.dispatch(k, [out.buffer] + [t.buffer for t in ins], meta, kernel.launch_grid(info))
    return out


def run(backend: WgpuBackend, name: str, xs: Sequence[WgpuTensor], attrs: tuple[tuple[str, Any], ...]) -> Any:
    """``WgpuBackend.custom``: the op's WGSL kernel (tuned among variants), else its fallbacks."""
    from ._tuning import tuner

    return dispatch(backend, name, xs, attrs, key="wgpu", launch=launch, tuner=tuner)
