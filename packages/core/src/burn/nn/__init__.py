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
from ._module import Module
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
    MaxPool1d,
    MaxPool1dConfig,
    MaxPool2d,
    MaxPool2dConfig,
)
from ._rnn import Gru, GruConfig, Lstm, LstmConfig, LstmState
from ._sequential import Sequential, SequentialConfig
from ._transformer import TransformerEncoder, TransformerEncoderConfig, TransformerEncoderLayer

__all__ = [
    "AdaptiveAvgPool1d",
    "AdaptiveAvgPool1dConfig",
    "AdaptiveAvgPool2d",
    "AdaptiveAvgPool2dConfig",
    "AvgPool1d",
    "AvgPool1dConfig",
    "AvgPool2d",
    "AvgPool2dConfig",
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
