"""Compiled cpu kernels: burn.fusion's plans rendered to C (``_c_renderer``), built by the system C
compiler (``_toolchain``) and run on numpy buffers (``_runtime``) by the cpu device's fusion runtime.

``burn.device("cpu", fusion=True)`` uses them where a compiler is found, and numpy alone where none is
(Pyodide, no ``cc``/``gcc``/``clang``) or ``BURN_CPU_NATIVE=0``; ``burn info`` says which.
"""

from __future__ import annotations

from typing import Any

from ._toolchain import Toolchain, native_dir, toolchain


def runtime_for(backend: Any) -> Any:
    """The numpy backend's fusion runtime: a ``NativeRuntime`` where a compiler works, else None."""
    tc = toolchain()
    if not tc.available:
        return None
    from ._runtime import NativeRuntime

    return NativeRuntime(backend, tc)


def describe() -> dict[str, Any]:
    """What ``burn info`` reports: whether cpu kernels are compiled, with which compiler and flags, or
    why not, and where they are cached."""
    tc = toolchain()
    return {
        "native": tc.available,
        "compiler": tc.path,
        "flags": list(tc.flags),
        "openmp": tc.openmp,
        "mvec": tc.mvec,
        "reason": tc.reason,
        "cache": str(native_dir()),
    }


__all__ = ["Toolchain", "describe", "native_dir", "runtime_for", "toolchain"]
