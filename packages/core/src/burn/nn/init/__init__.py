"""burn.nn.init: initializer configs (``nn.init.KaimingUniform(gain=...)``) used by module configs."""

from ._initializers import (
    Constant,
    Initializer,
    KaimingNormal,
    KaimingUniform,
    Normal,
    Ones,
    Orthogonal,
    Uniform,
    XavierNormal,
    XavierUniform,
    Zeros,
    fans,
)

__all__ = [
    "Constant",
    "Initializer",
    "KaimingNormal",
    "KaimingUniform",
    "Normal",
    "Ones",
    "Orthogonal",
    "Uniform",
    "XavierNormal",
    "XavierUniform",
    "Zeros",
    "fans",
]
