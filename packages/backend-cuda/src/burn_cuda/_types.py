"""Type aliases for CuPy objects: CuPy ships no type information, so they are ``Any`` to a type checker;
the names say what a value holds."""

from __future__ import annotations

from typing import Any

Prim = Any  # the backend's primitive: a cupy.ndarray on the backend's device
Scalar = float | int | bool
Kernel = Any  # a compiled cupy.ElementwiseKernel / RawKernel
Stream = Any  # a cupy.cuda.Stream
