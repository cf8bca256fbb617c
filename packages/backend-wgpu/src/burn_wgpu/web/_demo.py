"""``burn web train-demo digits -o DIR``: a page that trains the digits CNN in the browser.

``train_demo`` exports the training step of the digits example's CNN (``export_training``: Adam, loss
and accuracy), writes the 8x8 digits that ``burn.data.vision.DigitsDataset`` reads (its train and test
splits) as ``digits.bin``, the run's settings as ``demo.json``, and the demo: ``index.html`` (the live
chart, the metrics, pause/resume, "download weights"), ``demo.js`` (its main-thread code: drawing and
controls only) and ``worker.js`` (the training loop in a module Worker, so the page never blocks).

``digits.bin``: the ASCII magic ``BDIG``, then uint32 little-endian train count, test count, height,
width; then the train images (uint8 pixel counts 0..16, row-major), the train labels (uint8), the test
images and the test labels. The page normalises pixels as the example's batcher does:
``(count / 16 - 0.3) / 0.4``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

import burn

from ._export import _html_escape
from ._record import WebExportError
from ._train_export import TrainingExport, export_training

MEAN, STD = 0.3, 0.4  # the digits example's ImageClassificationBatcher(mean=0.3, std=0.4)
MAGIC = b"BDIG"
_PAGE_FILES = ("demo.js", "worker.js")


def digits_cnn() -> Any:
    """The digits example's CNN (``burn_train.examples.digits``: same layers and names, so a record of
    one loads into the other): conv 1->16 and 16->32 (3x3, padding 1), each followed by relu and a 2x2
    max pool, then a linear layer 128->10. Input (N, 1, 8, 8) float32, output logits (N, 10)."""
    from burn import nn
    from burn.nn import functional as F

    class DigitsCnn(nn.Module):
        def __init__(self) -> None:
            self.conv1 = nn.Conv2dConfig((1, 16), 3, padding=1).init()
            self.conv2 = nn.Conv2dConfig((16, 32), 3, padding=1).init()
            self.pool = nn.MaxPool2dConfig(2, stride=2).init()
            self.fc = nn.LinearConfig(32 * 2 * 2, 10).init()

        def forward(self, images: Any) -> Any:
            x = self.pool(F.relu(self.conv1(images)))
            x = self.pool(F.relu(self.conv2(x)))
            return self.fc(x.flatten(1))

    return DigitsCnn()


def classify(model: Any, images: Any, labels: Any) -> dict[str, Any]:
    """The demo's step: cross-entropy of the logits and the batch accuracy (one-element tensors)."""
    from burn.nn import functional as F

    logits = model(images)
    return {
        "loss": F.cross_entropy(logits, labels),
        "accuracy": (logits.argmax(1).reshape(labels.shape) == labels).float().mean(),
    }


def digits_arrays() -> dict[str, Any]:
    """The digits splits as the page reads them: uint8 counts 0..16 (N, 8, 8) and uint8 labels."""
    import numpy as np
    from burn.data.vision import DigitsDataset

    out = {}
    for split, key in (("train", "train"), ("test", "valid")):
        ds = DigitsDataset(split)
        out[f"{key}_images"] = np.rint(ds.images * 16).astype(np.uint8)
        out[f"{key}_labels"] = ds.labels.astype(np.uint8)
    return out


def digits_bin(arrays: dict[str, Any]) -> bytes:
    """``digits.bin`` (see the module docstring) of ``digits_arrays()``."""
    import numpy as np

    n_train, n_valid = len(arrays["train_labels"]), len(arrays["valid_labels"])
    head = MAGIC + np.array([n_train, n_valid, 8, 8], "<u4").tobytes()
    parts = [arrays[k].tobytes() for k in ("train_images", "train_labels", "valid_images", "valid_labels")]
    return head + b"".join(parts)


def normalise(counts: Any) -> Any:
    """Pixel counts 0..16 (N, 8, 8) -> the (N, 1, 8, 8) float32 images the model trains on."""
    import numpy as np

    return ((counts.astype(np.float32) / 16.0 - MEAN) / STD).astype(np.float32)[:, None]


@dataclass
class TrainDemo:
    """What ``train_demo`` wrote: the folder, the training export under it, and the run's settings
    (``demo.json``: epochs, lr, batch size, seed, validation cadence, item counts)."""

    out_dir: Path
    export: TrainingExport
    settings: dict[str, Any]


DEMOS = ("digits",)


def train_demo(
    name: str,
    out_dir: str | Path,
    *,
    epochs: int = 5,
    lr: float = 2e-2,
    batch_size: int = 36,
    seed: int = 0,
    valid_every: int = 10,
    index: int = 0,
) -> TrainDemo:
    """Write a page that trains ``name`` (``"digits"``: the digits example's CNN on the 8x8 digits)
    in the browser on WebGPU: a Worker runs ``epochs`` epochs of Adam steps (learning rate ``lr``,
    cosine-annealed to ``lr / 20``, batches of ``batch_size`` shuffled by ``seed``), validating every
    ``valid_every`` steps on the test split; the page charts loss and validation accuracy, shows step
    time, items/s, the adapter and browser metrics (the names of burn-metrics-web: ``Page Time``,
    ``Step Time``, ``JS Heap Used``...), pauses and resumes, and downloads the weights as a burn record
    (``burn.record.from_bytes(digits_cnn(), bytes)`` in Python). Serve the folder over http(s).

    >>> import tempfile, burn_wgpu.web
    >>> demo = burn_wgpu.web.train_demo("digits", tempfile.mkdtemp(), epochs=1)
    >>> sorted(p.name for p in demo.out_dir.iterdir())
    ['demo.js', 'demo.json', 'digits.bin', 'index.html', 'trainer.js', 'weights.bin', 'worker.js']
    >>> demo.settings["steps_per_epoch"], demo.settings["valid_batches"]   # 1437 // 36, 360 // 36
    (39, 10)
    """
    import numpy as np

    if name not in DEMOS:
        raise WebExportError(f"train_demo: unknown demo {name!r} (demos: {', '.join(DEMOS)})")
    for what, value, low in (
        ("epochs", epochs, 1),
        ("batch_size", batch_size, 1),
        ("valid_every", valid_every, 1),
    ):
        if isinstance(value, bool) or not isinstance(value, int) or value < low:
            raise ValueError(f"train_demo: {what} must be an int >= {low}, got {value!r}")
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < 2**32:
        raise ValueError(f"train_demo: seed must be an int in [0, 2^32), got {seed!r}")
    arrays = digits_arrays()
    n_train, n_valid = len(arrays["train_labels"]), len(arrays["valid_labels"])
    if batch_size > min(n_train, n_valid):
        raise ValueError(
            f"train_demo: batch_size {batch_size} exceeds the {min(n_train, n_valid)} test items"
        )
    burn.seed(seed)
    model = digits_cnn()
    example = {
        "images": normalise(arrays["train_images"][:batch_size]),
        "labels": arrays["train_labels"][:batch_size].astype(np.int32),
    }
    title = f"burn: train the {name} CNN in this page"
    export = export_training(
        model, classify, burn.optim.AdamConfig().init(), example, out_dir, lr=lr, title=title, index=index
    )
    folder = export.out_dir
    settings = {
        "demo": name,
        "epochs": epochs,
        "lr": lr,
        "min_lr": lr / 20,
        "batch_size": batch_size,
        "seed": seed,
        "valid_every": valid_every,
        "train_items": n_train,
        "valid_items": n_valid,
        "steps_per_epoch": n_train // batch_size,
        "valid_batches": n_valid // batch_size,
        "classes": 10,
        "mean": MEAN,
        "std": STD,
        "data": "digits.bin",
        "weights_file": f"{name}-cnn.safetensors",
    }
    here = resources.files(__package__)
    (folder / "digits.bin").write_bytes(digits_bin(arrays))
    (folder / "demo.json").write_text(json.dumps(settings, indent=1), encoding="utf-8")
    for fname in _PAGE_FILES:
        (folder / fname).write_text(here.joinpath(fname).read_text(encoding="utf-8"), encoding="utf-8")
    page = here.joinpath("demo.html").read_text(encoding="utf-8").replace("{{TITLE}}", _html_escape(title))
    (folder / "index.html").write_text(page, encoding="utf-8")
    return TrainDemo(folder, export, settings)
