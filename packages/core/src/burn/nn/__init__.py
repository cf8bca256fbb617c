"""burn.nn: modules, their configs, initializers (``nn.init``) and the functional API (``nn.functional``).

>>> import burn
>>> from burn import nn
>>> layer = nn.LinearConfig(4, 2).init(burn.device("cpu"))
>>> layer(burn.ones((3, 4))).shape
(3, 2)
"""

from . import functional, init
from ._activation import (
    Gelu,
    GeluConfig,
    LeakyRelu,
    LeakyReluConfig,
    PRelu,
    PReluConfig,
    Relu,
    ReluConfig,
    Sigmoid,
    SigmoidConfig,
    Silu,
    SiluConfig,
    Tanh,
    TanhConfig,
)
from ._attention import MhaOutput, MultiHeadAttention, MultiHeadAttentionConfig
from ._conv import (
    Conv1d,
    Conv1dConfig,
    Conv2d,
    Conv2dConfig,
    Conv3d,
    Conv3dConfig,
    ConvTranspose1d,
    ConvTranspose1dConfig,
    ConvTranspose2d,
    ConvTranspose2dConfig,
    ConvTranspose3d,
    ConvTranspose3dConfig,
)
from ._deform_conv import DeformConv2d, DeformConv2dConfig
from ._dropout import Dropout, DropoutConfig
from ._encoding import PositionalEncoding, PositionalEncodingConfig, RotaryEncoding, RotaryEncodingConfig
from ._linear import Embedding, EmbeddingConfig, Linear, LinearConfig
from ._module import Module, config_shorthand
from ._norm import (
    BatchNorm,
    BatchNormConfig,
    GroupNorm,
    GroupNormConfig,
    InstanceNorm,
    InstanceNormConfig,
    LayerNorm,
    LayerNormConfig,
    RmsNorm,
    RmsNormConfig,
)
from ._param import Param, RunningState
from ._pool import (
    AdaptiveAvgPool1d,
    AdaptiveAvgPool1dConfig,
    AdaptiveAvgPool2d,
    AdaptiveAvgPool2dConfig,
    AvgPool1d,
    AvgPool1dConfig,
    AvgPool2d,
    AvgPool2dConfig,
    AvgPool3d,
    AvgPool3dConfig,
    MaxPool1d,
    MaxPool1dConfig,
    MaxPool2d,
    MaxPool2dConfig,
    MaxPool3d,
    MaxPool3dConfig,
)
from ._rnn import Gru, GruConfig, Lstm, LstmConfig, LstmState
from ._sequential import Sequential, SequentialConfig
from ._transformer import TransformerEncoder, TransformerEncoderConfig, TransformerEncoderLayer

# PyTorch's spelling of the common modules, ``nn.Linear(16, 64, device=dev)``, as a shorthand for
# ``nn.LinearConfig(16, 64).init(dev)`` (the config stays the canonical path); pools take no device
_SHORTHANDS: tuple[tuple[type, type, bool], ...] = (
    (Linear, LinearConfig, True),
    (Embedding, EmbeddingConfig, True),
    (Conv1d, Conv1dConfig, True),
    (Conv2d, Conv2dConfig, True),
    (Conv3d, Conv3dConfig, True),
    (ConvTranspose1d, ConvTranspose1dConfig, True),
    (ConvTranspose2d, ConvTranspose2dConfig, True),
    (ConvTranspose3d, ConvTranspose3dConfig, True),
    (DeformConv2d, DeformConv2dConfig, True),
    (BatchNorm, BatchNormConfig, True),
    (LayerNorm, LayerNormConfig, True),
    (GroupNorm, GroupNormConfig, True),
    (InstanceNorm, InstanceNormConfig, True),
    (RmsNorm, RmsNormConfig, True),
    (Lstm, LstmConfig, True),
    (Gru, GruConfig, True),
    (MultiHeadAttention, MultiHeadAttentionConfig, True),
    (MaxPool1d, MaxPool1dConfig, False),
    (MaxPool2d, MaxPool2dConfig, False),
    (AvgPool1d, AvgPool1dConfig, False),
    (AvgPool2d, AvgPool2dConfig, False),
    (MaxPool3d, MaxPool3dConfig, False),
    (AvgPool3d, AvgPool3dConfig, False),
    (AdaptiveAvgPool1d, AdaptiveAvgPool1dConfig, False),
    (AdaptiveAvgPool2d, AdaptiveAvgPool2dConfig, False),
)
for _module, _config, _device in _SHORTHANDS:
    config_shorthand(_config, takes_device=_device)(_module)
del _module, _config, _device

__all__ = [
    "AdaptiveAvgPool1d",
    "AdaptiveAvgPool1dConfig",
    "AdaptiveAvgPool2d",
    "AdaptiveAvgPool2dConfig",
    "AvgPool1d",
    "AvgPool1dConfig",
    "AvgPool2d",
    "AvgPool2dConfig",
    "AvgPool3d",
    "AvgPool3dConfig",
    "BatchNorm",
    "BatchNormConfig",
    "Conv1d",
    "Conv1dConfig",
    "Conv2d",
    "Conv2dConfig",
    "Conv3d",
    "Conv3dConfig",
    "ConvTranspose1d",
    "ConvTranspose1dConfig",
    "ConvTranspose2d",
    "ConvTranspose2dConfig",
    "ConvTranspose3d",
    "ConvTranspose3dConfig",
    "DeformConv2d",
    "DeformConv2dConfig",
    "Dropout",
    "DropoutConfig",
    "Embedding",
    "EmbeddingConfig",
    "Gelu",
    "GeluConfig",
    "GroupNorm",
    "GroupNormConfig",
    "Gru",
    "GruConfig",
    "InstanceNorm",
    "InstanceNormConfig",
    "LayerNorm",
    "LayerNormConfig",
    "LeakyRelu",
    "LeakyReluConfig",
    "Linear",
    "LinearConfig",
    "Lstm",
    "LstmConfig",
    "LstmState",
    "MaxPool1d",
    "MaxPool1dConfig",
    "MaxPool2d",
    "MaxPool2dConfig",
    "MaxPool3d",
    "MaxPool3dConfig",
    "MhaOutput",
    "Module",
    "MultiHeadAttention",
    "MultiHeadAttentionConfig",
    "PRelu",
    "PReluConfig",
    "Param",
    "PositionalEncoding",
    "PositionalEncodingConfig",
    "Relu",
    "ReluConfig",
    "RmsNorm",
    "RmsNormConfig",
    "RotaryEncoding",
    "RotaryEncodingConfig",
    "RunningState",
    "Sequential",
    "SequentialConfig",
    "Sigmoid",
    "SigmoidConfig",
    "Silu",
    "SiluConfig",
    "Tanh",
    "TanhConfig",
    "TransformerEncoder",
    "TransformerEncoderConfig",
    "TransformerEncoderLayer",
    "functional",
    "init",
]
