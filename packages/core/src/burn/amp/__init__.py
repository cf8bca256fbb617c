"""Automatic mixed precision: ``autocast`` (half-precision matmul-heavy ops, float32 sensitive ops,
float32 master weights) and ``GradScaler`` (dynamic loss scaling for float16).

>>> dev = burn.device("cpu", autodiff=True)
>>> model = nn.LinearConfig(3, 2).init(dev)
>>> scaler = burn.amp.GradScaler()
>>> with burn.amp.autocast("float16"):
...     logits = model(burn.ones((4, 3), device=dev))          # float16
...     loss = F.cross_entropy(logits, burn.tensor([0, 1, 0, 1], device=dev))   # float32
>>> grads = scaler.scale(loss).backward()
>>> logits.dtype, loss.dtype, model.weight.val().grad(grads).dtype   # master weights stay float32
(burn.float16, burn.float32, burn.float32)
>>> model = scaler.step(burn.optim.AdamConfig().init(), 1e-3, model, grads)

``burn_train.LearnerBuilder.mixed_precision("float16")`` does all of this for a ``Learner``.
"""

from ._autocast import autocast, autocast_dtype, is_autocast_enabled
from ._scaler import GradScaler

__all__ = ["GradScaler", "autocast", "autocast_dtype", "is_autocast_enabled"]
