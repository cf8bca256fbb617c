"""Import-light descriptions of what plugins provide.

A spec names a thing and says how to build it, but building (and importing its heavy libraries) waits
until it is used. ``is_available()`` answers ``(True, "")`` or ``(False, reason)`` at run time, so a
plugin can be installed everywhere and picked only where it can run.

Specs check their fields when built, so a plugin with a typo fails inside its own hook (and is reported
as broken) rather than later, inside ``burn.device()``.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib import import_module
from typing import TYPE_CHECKING, Any

from .._errors import BurnError

if TYPE_CHECKING:
    from ..backend import Backend

# Backend names appear in device strings ("name:0") that burn.device() lower-cases before lookup, so
# they must be lowercase and free of ':' and spaces. "auto" is burn.device()'s own keyword.
_BACKEND_NAME = re.compile(r"[a-z][a-z0-9_.-]*\Z")
_RESERVED_BACKEND_NAMES = frozenset({"auto"})


def _always() -> tuple[bool, str]:
    return True, ""


def _no_devices() -> list[str]:
    return []


def _check_callable(kind: str, field_name: str, value: object) -> None:
    if not callable(value):
        raise TypeError(f"{kind}.{field_name}: expected a callable, got {type(value).__name__}")


def _check_backend_name(field_name: str, value: object) -> None:
    if not isinstance(value, str) or not _BACKEND_NAME.match(value):
        raise ValueError(
            f"BackendSpec.{field_name}: expected a lowercase name of letters, digits, '_', '-' or '.' "
            f"starting with a letter (it is used in device strings such as 'name:0'), got {value!r}"
        )
    if value in _RESERVED_BACKEND_NAMES:
        raise ValueError(f"BackendSpec.{field_name}: {value!r} is reserved by burn.device()")


_DEVICE_PARAMETERS = frozenset({"spec", "autodiff"})  # burn.device()'s own parameters


def _check_backend_options(options: object) -> None:
    if isinstance(options, str) or not isinstance(options, (tuple, list)):
        raise TypeError(f"BackendSpec.options: expected a tuple of keyword names, got {options!r}")
    for option in options:
        if not isinstance(option, str) or not option.isidentifier():
            raise ValueError(f"BackendSpec.options: expected keyword names, got {option!r}")
        if option in _DEVICE_PARAMETERS:
            raise ValueError(f"BackendSpec.options: {option!r} is a parameter of burn.device() itself")
    if len(set(options)) != len(options):
        raise ValueError(f"BackendSpec.options: {tuple(options)!r} repeats a name")


@dataclass(frozen=True)
class BackendSpec:
    """A tensor backend a plugin offers.

    ``factory(index)`` builds a ``burn.backend.Backend`` for device ``index`` (called lazily, once per
    device). ``is_available()`` returns ``(ok, reason)``. ``devices()`` lists device strings such as
    ``["wgpu:0"]`` and may import the backend's library; it is only called when the backend is
    available. ``aliases`` are other names ``burn.device()`` accepts; ``priority`` orders backends
    for ``burn.device("auto")`` (higher wins), among those whose ``auto_available()`` (default:
    ``is_available()``) says yes. ``options`` names the backend's own keyword options:
    ``burn.device(name, url=...)`` passes the ones given to ``factory(index, **options)`` (a backend with
    options keeps a separate instance per distinct set of values). For example::

        BackendSpec(name="trace", factory=lambda index: TraceBackend(), aliases=("tracer",))
        BackendSpec(name="remote", factory=connect, options=("url", "token", "timeout"))
    """

    name: str
    factory: Callable[[int], Backend]
    is_available: Callable[[], tuple[bool, str]] = _always
    devices: Callable[[], list[str]] = _no_devices
    aliases: tuple[str, ...] = ()
    priority: int = 0
    description: str = ""
    # decorators on by default for this backend's devices (GPU backends: ("fusion",)); burn.device(...,
    # fusion=False) or BURN_FUSION=0 turns one off
    default_decorators: tuple[str, ...] = ()
    # keyword options burn.device() passes to factory(index, **options) (e.g. ("url", "token", "timeout"))
    options: tuple[str, ...] = ()
    # whether burn.device("auto") may pick it, as (ok, reason) (None: when is_available; wgpu says no
    # when its only adapters are software rasterisers, slower than the numpy backend)
    auto_available: Callable[[], tuple[bool, str]] | None = None

    def __post_init__(self) -> None:
        _check_backend_name("name", self.name)
        _check_backend_options(self.options)
        object.__setattr__(self, "options", tuple(self.options))
        object.__setattr__(self, "default_decorators", tuple(self.default_decorators))
        if isinstance(self.aliases, str) or not isinstance(self.aliases, (tuple, list)):
            raise TypeError(f"BackendSpec.aliases: expected a tuple of names, got {self.aliases!r}")
        object.__setattr__(self, "aliases", tuple(self.aliases))
        for alias in self.aliases:
            _check_backend_name("aliases", alias)
        for name in ("factory", "is_available", "devices"):
            _check_callable("BackendSpec", name, getattr(self, name))
        if not isinstance(self.priority, int) or isinstance(self.priority, bool):
            raise TypeError(f"BackendSpec.priority: expected an int, got {self.priority!r}")


@dataclass(frozen=True)
class MetricCollectorSpec:
    """A system metric collector a plugin offers.

    ``factory()`` builds a collector: an object with ``name``, ``collect() -> dict[str, float]`` and
    optionally ``close()``. ``group`` names the extra that installs it (``metrics-basic``,
    ``metrics-cuda``, ``metrics-wasm``).
    """

    name: str
    factory: Callable[[], Any]
    is_available: Callable[[], tuple[bool, str]] = _always
    group: str = ""
    description: str = ""

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name.strip():
            raise ValueError(f"MetricCollectorSpec.name: expected a non-empty string, got {self.name!r}")
        for name in ("factory", "is_available"):
            _check_callable("MetricCollectorSpec", name, getattr(self, name))


_OPTION_NAME = re.compile(r"[a-z_][a-z0-9_]*\Z")


@dataclass(frozen=True)
class DecoratorSpec:
    """A backend decorator a plugin offers: a backend that wraps another one (autodiff, fusion).

    ``burn.device(name, **{spec.name: True})`` puts a device behind it; the decorator's own keyword
    options (``options``, such as ``("checkpointing",)``) are accepted by ``burn.device()`` alongside.
    ``factory(inner, device, **options)`` builds the decorated backend, lazily and once per device:
    ``inner`` is the backend of the same device without this decorator, ``device`` the ``burn.Device``
    being built, and ``options`` the values given for the names in ``options`` (defaults otherwise).
    Autodiff always wraps outermost; other decorators stack in name order beneath it. For example::

        DecoratorSpec(name="trace", factory=lambda inner, device: TraceDecorator(inner))
    """

    name: str
    factory: Callable[..., Backend]
    options: tuple[str, ...] = ()
    description: str = ""

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not _OPTION_NAME.match(self.name):
            raise ValueError(
                "DecoratorSpec.name: expected a lowercase identifier (it is a keyword of burn.device()), "
                f"got {self.name!r}"
            )
        if isinstance(self.options, str) or not isinstance(self.options, (tuple, list)):
            raise TypeError(f"DecoratorSpec.options: expected a tuple of keyword names, got {self.options!r}")
        object.__setattr__(self, "options", tuple(self.options))
        for option in self.options:
            if not isinstance(option, str) or not option.isidentifier():
                raise ValueError(f"DecoratorSpec.options: expected keyword names, got {option!r}")
        if len({self.name, *self.options}) != 1 + len(self.options):
            raise ValueError(
                f"DecoratorSpec.options: {self.options!r} repeats a name or the decorator's own {self.name!r}"
            )
        _check_callable("DecoratorSpec", "factory", self.factory)


@dataclass(frozen=True)
class CollectiveSpec:
    """A collective a plugin offers for the tensors of its backends: all-reduce and friends among the
    ranks of a multi-process job, on the devices themselves (NCCL for ``cuda``).

    ``backends`` names the backends whose devices it serves, one device per rank. ``factory(host,
    device)`` builds a ``burn.distributed.Collective`` among the ranks of ``host`` (the collective that
    carries Python objects among the same ranks: MPI in burn-train) for this rank's ``device`` (called
    lazily, once per device). ``is_available()`` returns ``(ok, reason)`` and may load the library and
    look for devices; ``is_installed()`` returns ``(ok, detail)`` from what is installed alone and stays
    import-light (``burn --help`` shows it). For example::

        CollectiveSpec(name="nccl", backends=("cuda",), factory=make_nccl, is_available=nccl_probe)
    """

    name: str
    backends: tuple[str, ...]
    factory: Callable[[Any, Any], Any]
    is_available: Callable[[], tuple[bool, str]] = _always
    is_installed: Callable[[], tuple[bool, str]] = _always
    description: str = ""

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not _OPTION_NAME.match(self.name):
            raise ValueError(
                "CollectiveSpec.name: expected a lowercase identifier (it is a value of the "
                f"collective= option), got {self.name!r}"
            )
        if self.name in _RESERVED_COLLECTIVES:
            raise ValueError(f"CollectiveSpec.name: {self.name!r} is reserved by the training loop")
        if (
            isinstance(self.backends, str)
            or not isinstance(self.backends, (tuple, list))
            or not self.backends
        ):
            raise TypeError(
                f"CollectiveSpec.backends: expected a non-empty tuple of backend names, got {self.backends!r}"
            )
        object.__setattr__(self, "backends", tuple(self.backends))
        for name in ("factory", "is_available", "is_installed"):
            _check_callable("CollectiveSpec", name, getattr(self, name))


_RESERVED_COLLECTIVES = frozenset({"auto", "mpi"})  # burn-train's own choices of collective=

_COMMAND_NAME = re.compile(r"[a-z][a-z0-9-]*\Z")
_RESERVED_COMMANDS = frozenset({"info", "help"})  # burn-core's own command, and argparse's


@dataclass(frozen=True)
class CommandSpec:
    """A subcommand of the ``burn`` command line a plugin offers: ``burn NAME ...``.

    ``configure(parser)`` adds the command's arguments (and sub-subcommands) to its ``argparse`` parser;
    it runs whenever ``burn`` builds its parser, so it must stay import-light. ``run(args)`` does the work
    (import heavy libraries here) and returns the exit status (None means 0). A usage error found while
    running (a file that cannot be read, a flag value out of range, a missing optional dependency) is
    raised as ``CommandError``: ``burn`` prints it as one line and exits 2. For example::

        CommandSpec(name="onnx", configure=add_onnx_arguments, run=run_onnx, help="ONNX import tools")
    """

    name: str
    configure: Callable[[Any], None]
    run: Callable[[Any], int | None]
    help: str = ""
    description: str = ""

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not _COMMAND_NAME.match(self.name):
            raise ValueError(
                "CommandSpec.name: expected a lowercase word of letters, digits and '-' starting with a "
                f"letter (it is typed after `burn`), got {self.name!r}"
            )
        if self.name in _RESERVED_COMMANDS:
            raise ValueError(f"CommandSpec.name: {self.name!r} is a command of burn-core itself")
        for name in ("configure", "run"):
            _check_callable("CommandSpec", name, getattr(self, name))

    @classmethod
    def lazy(cls, name: str, module: str, help: str = "", description: str = "") -> CommandSpec:
        """A command whose ``configure(parser)`` and ``run(args)`` are the functions of those names in
        ``module``, imported only when ``burn`` builds its parser or runs the command: the entry point
        that registers it stays import-light and needs no wrapper functions.

        >>> from burn.plugins import CommandSpec
        >>> CommandSpec.lazy("greet", "burn_greet._cli", help="say hello").name
        'greet'
        """

        def configure(parser: Any) -> None:
            import_module(module).configure(parser)

        def run(args: Any) -> int | None:
            result: int | None = import_module(module).run(args)
            return result

        return cls(name, configure, run, help, description)


class CommandError(BurnError, ValueError):
    """A usage error of a ``burn`` command: a bad flag value, a file that is missing, unreadable or not
    what was expected, a missing optional dependency, a port in use. The message names the argument or
    file and what was expected; ``burn`` prints it after the command's name as one line, without a
    traceback, and exits with status 2. ``burn.DeviceError`` (an unknown or unavailable device) is
    reported the same way.

    >>> from burn.plugins import CommandError
    >>> str(CommandError("--token-file token.txt: no such file"))
    '--token-file token.txt: no such file'
    """


@dataclass
class BrokenPlugin:
    """An entry point that failed to load or register, with the error that stopped it.

    ``stage`` is ``"import"`` (loading the entry point raised) or ``"register"`` (registering it or
    running its hooks raised); ``traceback`` holds the formatted traceback for ``burn info -v``.
    """

    name: str
    value: str
    dist: str
    error: str
    version: str = ""
    stage: str = "import"
    traceback: str = ""


@dataclass
class PluginInfo:
    """A plugin that loaded, with the distribution that provides it and what it registered
    (``"backend:<name>"``, ``"collector:<name>"``, ``"decorator:<name>"``, ``"renderer:<name>"``,
    ``"command:<name>"``, ``"collective:<name>"``)."""

    name: str
    value: str
    dist: str
    version: str
    provides: list[str] = field(default_factory=list)
