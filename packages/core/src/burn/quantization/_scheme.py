"""``QuantScheme``: how values map to int8 (Burn 0.16's QuantizationScheme, PyTorch's qscheme)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

MODES = ("symmetric", "affine")
GRANULARITIES = ("per_tensor", "per_channel", "per_block")
# int dtype name -> (qmin, qmax)
QDTYPES = {"int8": (-128, 127)}


@dataclass(frozen=True)
class QuantScheme:
    """A quantization scheme: ``q = clamp(round_half_even(x / scale + zero_point), -128, 127)``.

    ``mode``: "symmetric" (zero point 0, scale = max|x| / 127.5, as PyTorch's qint8 observers) or
    "affine" (scale = (max - min) / 255 over a range that includes 0, and an int zero point).
    ``granularity``: "per_tensor" (one scale), "per_channel" (one per index of dim ``axis``) or
    "per_block" (one per ``block_size`` consecutive values of the last dim; giving ``block_size``
    selects it).

    >>> from burn.quantization import QuantScheme
    >>> QuantScheme(mode="affine", granularity="per_channel", axis=1).granularity
    'per_channel'
    >>> QuantScheme(block_size=32).granularity
    'per_block'
    """

    dtype: str = "int8"
    mode: str = "symmetric"
    granularity: str = "per_tensor"
    axis: int = 0
    block_size: int | None = None

    def __post_init__(self) -> None:
        dtype: Any = self.dtype
        name = getattr(dtype, "name", dtype)
        if name not in QDTYPES:
            raise ValueError(f"QuantScheme: dtype must be one of {sorted(QDTYPES)}, got {dtype!r}")
        object.__setattr__(self, "dtype", name)
        if self.mode not in MODES:
            raise ValueError(f"QuantScheme: mode must be one of {MODES}, got {self.mode!r}")
        if self.granularity not in GRANULARITIES:
            raise ValueError(
                f"QuantScheme: granularity must be one of {GRANULARITIES}, got {self.granularity!r}"
            )
        if not isinstance(self.axis, int) or isinstance(self.axis, bool):
            raise TypeError(f"QuantScheme: axis must be an int, got {self.axis!r}")
        if self.block_size is not None:
            if (
                not isinstance(self.block_size, int)
                or isinstance(self.block_size, bool)
                or self.block_size < 1
            ):
                raise ValueError(f"QuantScheme: block_size must be a positive int, got {self.block_size!r}")
            if self.granularity == "per_channel":
                raise ValueError(
                    "QuantScheme: block_size selects per_block granularity; drop granularity='per_channel'"
                )
            object.__setattr__(self, "granularity", "per_block")
        elif self.granularity == "per_block":
            raise ValueError("QuantScheme: granularity='per_block' needs block_size (e.g. block_size=32)")

    @property
    def qmin(self) -> int:
        """The smallest quantized value (-128 for int8)."""
        return QDTYPES[self.dtype][0]

    @property
    def qmax(self) -> int:
        """The largest quantized value (127 for int8)."""
        return QDTYPES[self.dtype][1]

    def to_json(self) -> dict[str, Any]:
        """The scheme as plain JSON values (records store it next to the quantized values)."""
        return {
            "dtype": self.dtype,
            "mode": self.mode,
            "granularity": self.granularity,
            "axis": self.axis,
            "block_size": self.block_size,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> QuantScheme:
        """The scheme ``to_json`` wrote."""
        return cls(**data)
