"""burn.data: datasets, dataset transforms, batchers and the data loader (Burn's ``burn-dataset`` and
``burn::data``). ``burn.data.vision`` holds image datasets (MNIST IDX files, image folders, COCO) and an
offline handwritten-digits dataset.

>>> from burn.data import DataLoaderBuilder, InMemDataset
>>> loader = DataLoaderBuilder(lambda items, device: list(items)).batch_size(2).build(InMemDataset("abc"))
>>> list(loader)
[['a', 'b'], ['c']]

Importing burn.data starts no thread and loads neither numpy nor Pillow.
"""

from importlib import import_module as _import_module
from typing import TYPE_CHECKING

from ._batcher import Batcher
from ._composed import ComposedDataset
from ._dataloader import DataLoader, DataLoaderBuilder
from ._dataset import Dataset, InMemDataset
from ._errors import DataLoaderError, DatasetError
from ._mapper import Mapper, MapperDataset
from ._partial import PartialDataset
from ._sampling import SamplerDataset, ShuffledDataset
from ._windows import WindowsDataset

if TYPE_CHECKING:  # loads on first access (__getattr__ below)
    from . import vision


def __getattr__(name: str) -> object:
    if name == "vision":
        module = _import_module(f"{__name__}.vision")
        globals()[name] = module
        return module
    raise AttributeError(f"module 'burn.data' has no attribute {name!r}")


__all__ = [
    "Batcher",
    "ComposedDataset",
    "DataLoader",
    "DataLoaderBuilder",
    "DataLoaderError",
    "Dataset",
    "DatasetError",
    "InMemDataset",
    "Mapper",
    "MapperDataset",
    "PartialDataset",
    "SamplerDataset",
    "ShuffledDataset",
    "WindowsDataset",
    "vision",
]
