"""The exceptions burn raises. Each subclasses the builtin users already catch (ValueError/TypeError)."""


class BurnError(Exception):
    """Base class of burn's own errors."""


class ShapeError(BurnError, ValueError):
    """Shapes that do not fit the op: the message names the op, the argument, expected and received."""


class DTypeError(BurnError, TypeError):
    """A dtype the op or backend does not accept."""


class DeviceError(BurnError, ValueError):
    """Tensors on different devices, or a device that is unknown or unavailable."""


class ConfigError(BurnError, ValueError):
    """A configuration value out of range (negative learning rate, zero step size, ...)."""


class RecordError(BurnError, ValueError):
    """A record that does not match the module: names, shapes or dtypes, all listed at once."""


class BackendUnavailableError(DeviceError):
    """A backend that is installed but cannot run here (missing library or driver)."""


class DimError(ShapeError, IndexError):
    """A dim out of range for the tensor's rank."""


class IndexOutOfRangeError(BurnError, IndexError):
    """An index value out of range for the dim it indexes."""


class ConfigTypeError(ConfigError, TypeError):
    """A config field whose value does not have the annotated type (``"four"`` for an ``int`` width).

    >>> try:
    ...     burn.nn.LinearConfig(d_input="4", d_output=2)
    ... except burn.config.ConfigTypeError as exc:
    ...     print(exc)
    LinearConfig: field 'd_input' must be int, got '4' (str)
    """
