"""burn.record: save and load module records (safetensors + JSON metadata), and PyTorch weights.

``save(module, path)`` / ``load(module, path)`` for files, ``to_bytes`` / ``from_bytes`` without one:

>>> model = nn.LinearConfig(4, 2).init()
>>> copy = burn.record.from_bytes(nn.LinearConfig(4, 2).init(), burn.record.to_bytes(model))
>>> np.array_equal(copy.weight.val().numpy(), model.weight.val().numpy())
True

``load_torch(path_or_state_dict, module, key_map=...)`` reads PyTorch and Hugging Face checkpoints
(.pt/.bin without running their pickle, safetensors, sharded ones) into the equivalent burn module,
converting names and layouts; ``save_torch(module, path)`` writes them back for PyTorch.
"""

from ._file import from_bytes, load, read_metadata, save, to_bytes
from ._torch import LoadReport, load_torch, save_torch, torch_state_dict

__all__ = [
    "LoadReport",
    "from_bytes",
    "load",
    "load_torch",
    "read_metadata",
    "save",
    "save_torch",
    "to_bytes",
    "torch_state_dict",
]
