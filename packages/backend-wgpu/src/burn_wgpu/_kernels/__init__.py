"""WGSL kernel generators: ``elementwise`` (the one expression table), ``reduce``, ``matmul``,
``index``, ``sort``, ``scan`` and ``quant`` (the int8 matmul). Each returns an ``_executor.Kernel``
(name, source, bindings)."""

from . import elementwise, index, matmul, quant, reduce, scan, sort

__all__ = ["elementwise", "index", "matmul", "quant", "reduce", "scan", "sort"]
