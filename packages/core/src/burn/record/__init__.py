"""burn.record: save and load module records (safetensors + JSON metadata).

``save(module, path)`` / ``load(module, path)`` for files, ``to_bytes`` / ``from_bytes`` without one:

>>> model = nn.LinearConfig(4, 2).init()
>>> copy = burn.record.from_bytes(nn.LinearConfig(4, 2).init(), burn.record.to_bytes(model))
>>> np.array_equal(copy.weight.val().numpy(), model.weight.val().numpy())
True
"""

from ._file import from_bytes, load, read_metadata, save, to_bytes

__all__ = ["from_bytes", "load", "read_metadata", "save", "to_bytes"]
