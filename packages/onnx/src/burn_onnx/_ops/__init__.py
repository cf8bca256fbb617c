"""The converters, one module per family; importing this package fills ``burn_onnx._registry.OPS``."""

from . import (
    _control,
    _elementwise,
    _grid_sample,
    _index,
    _loss,
    _nn,
    _quantize,
    _recurrent,
    _reduce,
    _resize,
    _sequence,
    _shape,
    _transformer,
)

FAMILIES = (
    _elementwise,
    _reduce,
    _shape,
    _index,
    _nn,
    _resize,
    _grid_sample,
    _recurrent,
    _control,
    _sequence,
    _quantize,
    _transformer,
    _loss,
)
