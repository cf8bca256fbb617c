"""Hook specifications. Hooks are register-callback style: a plugin calls ``register(spec)``."""

from collections.abc import Callable
from typing import Any

from ._markers import hookspec
from ._specs import BackendSpec, CollectiveSpec, CommandSpec, DecoratorSpec, MetricCollectorSpec


@hookspec
def burn_register_backends(register: Callable[[BackendSpec], None]) -> None:
    """Register tensor backends: call ``register(BackendSpec(...))`` once per backend."""


@hookspec
def burn_register_decorators(register: Callable[[DecoratorSpec], None]) -> None:
    """Register backend decorators (autodiff, fusion): call ``register(DecoratorSpec(...))`` once each."""


@hookspec
def burn_register_metric_collectors(register: Callable[[MetricCollectorSpec], None]) -> None:
    """Register system metric collectors: call ``register(MetricCollectorSpec(...))`` once each."""


@hookspec
def burn_register_renderers(register: Callable[[str, Callable[..., object]], None]) -> None:
    """Register training renderers by name: ``register("name", factory)``."""


@hookspec
def burn_register_commands(register: Callable[[CommandSpec], None]) -> None:
    """Register subcommands of the ``burn`` command line (``burn onnx ...``): call
    ``register(CommandSpec(...))`` once each. ``burn --help`` lists them only where the plugin is
    installed."""


@hookspec
def burn_register_collectives(register: Callable[[CollectiveSpec], None]) -> None:
    """Register collectives for the devices of a backend (NCCL for ``cuda``): call
    ``register(CollectiveSpec(...))`` once each. Multi-process training (burn-train) picks one for
    the devices it trains on through ``burn.distributed.device_collectives``."""


@hookspec
def burn_register_custom_ops(register: Callable[[Any], None]) -> None:
    """Register custom ops (``burn.custom``): call ``register(op)`` once per op built with
    ``burn.custom.op(..., register=False)`` or ``burn.custom.elementwise(..., register=False)``; code and
    remote servers then find it by name (``burn.custom.get``)."""
