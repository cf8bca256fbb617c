"""burn.record: save and load module records (safetensors + JSON metadata).

>>> burn.record.save(model, "model.safetensors")          # doctest: +SKIP
>>> model = burn.record.load(model, "model.safetensors")  # doctest: +SKIP
"""

from ._file import from_bytes, load, read_metadata, save, to_bytes

__all__ = ["from_bytes", "load", "read_metadata", "save", "to_bytes"]
