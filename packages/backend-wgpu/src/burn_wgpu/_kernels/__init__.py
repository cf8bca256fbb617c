"""WGSL kernel generators: ``elementwise`` (the one expression table), ``reduce``, ``matmul``,
``index``, ``sort`` and ``scan``. Each returns an ``_executor.Kernel`` (name, source, bindings)."""

from . import elementwise, index, matmul, reduce, scan, sort

__all__ = ["elementwise", "index", "matmul", "reduce", "scan", "sort"]
