"""burn.optim: optimizers (``AdamConfig(...).init()``), gradient containers and clipping.

``model = opt.step(lr, model, grads)`` with grads a ``burn.Gradients`` or ``GradientsParams``.
"""

from ._adagrad import AdaGrad, AdaGradConfig
from ._adam import Adam, AdamConfig, AdamW, AdamWConfig
from ._base import Optimizer
from ._clipping import GradientClipping
from ._grads import GradientsAccumulator, GradientsParams
from ._rmsprop import RmsProp, RmsPropConfig
from ._sgd import Sgd, SgdConfig

__all__ = [
    "AdaGrad",
    "AdaGradConfig",
    "Adam",
    "AdamConfig",
    "AdamW",
    "AdamWConfig",
    "GradientClipping",
    "GradientsAccumulator",
    "GradientsParams",
    "Optimizer",
    "RmsProp",
    "RmsPropConfig",
    "Sgd",
    "SgdConfig",
]
