"""burn.config: ``Config``, the dataclass base of every module, optimizer and scheduler config."""

from dataclasses import field

from .._errors import ConfigTypeError
from ._config import Config, check

__all__ = ["Config", "ConfigTypeError", "check", "field"]
