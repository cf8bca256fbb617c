"""Recurrent layers: Lstm and Gru over batch-first sequences (batch, seq, d_input).

Each keeps two fused Linear layers: ``input_transform`` (d_input -> k * d_hidden) applied to the whole
sequence at once, and ``hidden_transform`` (d_hidden -> k * d_hidden) applied per step. Gate order is
PyTorch's: (input, forget, cell, output) for the LSTM and (reset, update, new) for the GRU.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

from .._creation import stack, zeros
from .._errors import ShapeError
from ..config import Config, check
from . import functional as F
from ._linear import Linear, LinearConfig
from ._module import Module
from .init import Initializer, XavierNormal

if TYPE_CHECKING:
    from .._device import DeviceLike
    from .._tensor import Tensor


class LstmState(NamedTuple):
    """The LSTM's state after a sequence: cell and hidden, each (batch, d_hidden). Pass it back in to
    continue the sequence.

    >>> lstm = nn.LstmConfig(d_input=4, d_hidden=3).init()
    >>> x = burn.randn((1, 6, 4))
    >>> _, state = lstm(x[:, :3])
    >>> rest, _ = lstm(x[:, 3:], state)   # the second half, from where the first stopped
    >>> np.allclose(rest.numpy(), lstm(x)[0][:, 3:].numpy(), atol=1e-6)
    True
    """

    cell: Tensor
    hidden: Tensor


class LstmConfig(Config):
    """Builds ``nn.Lstm``: the four gates fused, input_transform (d_input, 4 * d_hidden) and
    hidden_transform (d_hidden, 4 * d_hidden).

    >>> nn.LstmConfig(d_input=8, d_hidden=16).init().input_transform.weight.shape
    (8, 64)
    """

    d_input: int
    d_hidden: int
    bias: bool = True
    initializer: Initializer = XavierNormal(gain=1.0)

    def init(self, device: DeviceLike = None) -> Lstm:
        return Lstm(self, device)


def _transforms(
    owner: str, m: Lstm | Gru, config: LstmConfig | GruConfig, gates: int, device: DeviceLike
) -> None:
    check(config.d_input > 0 and config.d_hidden > 0, owner, "d_input and d_hidden must be positive")
    m.d_input, m.d_hidden = config.d_input, config.d_hidden
    h = config.d_hidden
    m.input_transform = LinearConfig(config.d_input, gates * h, config.bias, config.initializer).init(device)
    m.hidden_transform = LinearConfig(h, gates * h, config.bias, config.initializer).init(device)


def _check_input(owner: str, x: Tensor, d_input: int) -> tuple[int, int]:
    if x.ndim != 3 or x.shape[2] != d_input:
        raise ShapeError(f"{owner}: input must be (batch, seq, {d_input}), got {x.shape}")
    return x.shape[0], x.shape[1]


def _gate(t: Tensor, i: int, h: int) -> Tensor:
    return t.narrow(-1, i * h, h)


class Lstm(Module):
    """Long short-term memory. x: (batch, seq, d_input), optional state -> (output (batch, seq,
    d_hidden), LstmState(cell, hidden)).

    c' = f * c + i * g, h' = o * tanh(c') with i, f, o = sigmoid(...), g = tanh(...).

    >>> lstm = nn.LstmConfig(d_input=8, d_hidden=16).init()
    >>> out, state = lstm(burn.randn((2, 5, 8)))
    >>> out.shape, state.cell.shape, state.hidden.shape
    ((2, 5, 16), (2, 16), (2, 16))
    """

    d_input: int
    d_hidden: int
    input_transform: Linear
    hidden_transform: Linear

    def __init__(self, config: LstmConfig, device: DeviceLike = None) -> None:
        _transforms("LstmConfig", self, config, 4, device)
        self._config = config

    def forward(self, x: Tensor, state: LstmState | None = None) -> tuple[Tensor, LstmState]:
        b, s = _check_input("Lstm", x, self.d_input)
        h = self.d_hidden
        if state is None:
            cell = zeros((b, h), dtype=x.dtype, device=x.device)
            hidden = zeros((b, h), dtype=x.dtype, device=x.device)
        else:
            cell, hidden = state
        projected = self.input_transform(x)  # (b, s, 4h): the input half of every gate at once
        outputs = []
        for t in range(s):
            gates = projected[:, t, :] + self.hidden_transform(hidden)
            i, f = F.sigmoid(_gate(gates, 0, h)), F.sigmoid(_gate(gates, 1, h))
            g, o = F.tanh(_gate(gates, 2, h)), F.sigmoid(_gate(gates, 3, h))
            cell = f * cell + i * g
            hidden = o * F.tanh(cell)
            outputs.append(hidden)
        return stack(outputs, 1), LstmState(cell, hidden)


class GruConfig(Config):
    """Builds ``nn.Gru``: the three gates fused, input_transform (d_input, 3 * d_hidden) and
    hidden_transform (d_hidden, 3 * d_hidden).

    >>> nn.GruConfig(d_input=8, d_hidden=16).init().hidden_transform.weight.shape
    (16, 48)
    """

    d_input: int
    d_hidden: int
    bias: bool = True
    initializer: Initializer = XavierNormal(gain=1.0)

    def init(self, device: DeviceLike = None) -> Gru:
        return Gru(self, device)


class Gru(Module):
    """Gated recurrent unit. x: (batch, seq, d_input), optional initial hidden (batch, d_hidden) ->
    output (batch, seq, d_hidden).

    r, z = sigmoid(...); n = tanh(W_in x + r * (W_hn h + b_hn)); h' = (1 - z) * n + z * h.

    >>> gru = nn.GruConfig(d_input=8, d_hidden=16).init()
    >>> gru(burn.randn((2, 5, 8))).shape
    (2, 5, 16)
    """

    d_input: int
    d_hidden: int
    input_transform: Linear
    hidden_transform: Linear

    def __init__(self, config: GruConfig, device: DeviceLike = None) -> None:
        _transforms("GruConfig", self, config, 3, device)
        self._config = config

    def forward(self, x: Tensor, hidden: Tensor | None = None) -> Tensor:
        b, s = _check_input("Gru", x, self.d_input)
        h = self.d_hidden
        if hidden is None:
            hidden = zeros((b, h), dtype=x.dtype, device=x.device)
        projected = self.input_transform(x)
        outputs = []
        for t in range(s):
            xi = projected[:, t, :]
            hh = self.hidden_transform(hidden)
            r = F.sigmoid(_gate(xi, 0, h) + _gate(hh, 0, h))
            z = F.sigmoid(_gate(xi, 1, h) + _gate(hh, 1, h))
            n = F.tanh(_gate(xi, 2, h) + r * _gate(hh, 2, h))
            hidden = (1.0 - z) * n + z * hidden
            outputs.append(hidden)
        return stack(outputs, 1)
