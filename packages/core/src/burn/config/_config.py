"""``burn.config.Config``: a dataclass base with JSON save/load and nested configs (Burn's ``#[derive(Config)]``).

Subclasses are made dataclasses automatically, so a config reads like a plain annotated class::

    class MlpConfig(Config):
        d_hidden: int = 64
        linear: LinearConfig = field(default_factory=lambda: LinearConfig(4, 8))

Nested configs become nested JSON objects. A field whose value is a subclass of its declared type (an
initializer in a ``LinearConfig``, say) is written with a ``"__config__"`` key naming the class, so it
loads back as the same class.

Every field is checked against its annotation when a config is built (by hand, by ``with_`` or from
JSON): a value of another type raises ``burn.config.ConfigTypeError`` (a ``ConfigError`` and a
``TypeError``) naming the class, the field, the expected type and the value. Values are normalized on
the way: an int or a numpy number in a float field becomes a float, a list in a tuple field a tuple.
"""

from __future__ import annotations

import dataclasses
import enum
import inspect
import json
import os
import sys
import types
import typing
import weakref
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar, Union, cast

from .._errors import ConfigError, ConfigTypeError
from ._types import NoFit, fit, type_name

C = TypeVar("C", bound="Config")

# class name -> the config classes of that name (two modules may both define an ``Inner``)
_REGISTRY: dict[str, list[type[Config]]] = {}
_TYPE_KEY = "__config__"


@typing.dataclass_transform(field_specifiers=(dataclasses.field, dataclasses.Field))
class Config:
    """Base of every config: a dataclass with ``to_json``, ``save(path)``, ``load(path)``.

    >>> class MyConfig(Config):
    ...     width: int = 8
    >>> MyConfig.from_json(MyConfig(width=3).to_json()).width
    3
    >>> import os, tempfile
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     nn.LinearConfig(4, 2).save(os.path.join(tmp, "linear.json"))
    ...     loaded = nn.LinearConfig.load(os.path.join(tmp, "linear.json"))
    >>> loaded == nn.LinearConfig(4, 2), loaded.with_(bias=False).bias
    (True, False)
    """

    _frozen: ClassVar[bool] = False
    if TYPE_CHECKING:  # every subclass is made a dataclass (__init_subclass__)
        __dataclass_fields__: ClassVar[dict[str, dataclasses.Field[Any]]]

    def __init_subclass__(cls, frozen: bool | None = None, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if frozen is not None:
            cls._frozen = frozen
        # a fresh dataclass per subclass (a later @dataclass decorator simply redoes it)
        dataclasses.dataclass(cls, frozen=cls._frozen)
        _REGISTRY.setdefault(cls.__name__, []).append(cls)
        own = cls.__dict__.get("__post_init__")
        if own is not None and not getattr(own, "_checks_fields", False):
            # a subclass's own __post_init__ (range checks) then sees values of the right type
            def __post_init__(self: Config, *args: Any, _own: Any = own) -> None:
                _check_fields(self)
                _own(self, *args)

            __post_init__._checks_fields = True  # type: ignore[attr-defined]
            cls.__post_init__ = __post_init__  # type: ignore[method-assign]

    def __post_init__(self, *_: Any) -> None:
        _check_fields(self)

    # ------------------------------------------------------------------ dict / JSON
    def to_dict(self) -> dict[str, Any]:
        """The config as plain JSON-ready values (nested configs as dicts)."""
        hints = _hints(type(self))
        return {f.name: _encode(getattr(self, f.name), hints.get(f.name)) for f in dataclasses.fields(self)}

    @classmethod
    def from_dict(cls: type[C], data: dict[str, Any]) -> C:
        """Build the config from ``to_dict`` output; unknown keys and bad values raise ConfigError."""
        if not isinstance(data, dict):
            raise ConfigError(f"{cls.__name__}.from_dict: expected a dict, got {type(data).__name__}")
        data = dict(data)
        target = cls
        name = data.pop(_TYPE_KEY, None)
        if name is not None:
            found = _class_named(name, (cls,), cls.__module__)
            if found is None:
                raise ConfigError(f"{cls.__name__}.from_dict: unknown config class {name!r}")
            target = cast("type[C]", found)  # a subclass of cls: looked up among them
        hints = _hints(target)
        names = {f.name for f in dataclasses.fields(target)}
        unknown = sorted(set(data) - names)
        if unknown:
            raise ConfigError(
                f"{target.__name__}: unknown field(s) {unknown}; expected some of {sorted(names)}"
            )
        kwargs = {k: _decode(v, hints.get(k), target, f"{target.__name__}.{k}") for k, v in data.items()}
        try:
            return target(**kwargs)
        except ConfigError:
            raise
        except TypeError as exc:
            raise ConfigError(f"{target.__name__}: {exc}") from None

    def to_json(self, indent: int | None = 2) -> str:
        return json.dumps(self.to_dict(), indent=indent, sort_keys=False)

    @classmethod
    def from_json(cls: type[C], text: str) -> C:
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ConfigError(f"{cls.__name__}.from_json: invalid JSON: {exc}") from None
        return cls.from_dict(data)

    def save(self, path: str | os.PathLike) -> None:
        """Write the config as JSON (atomically: a temp file, then a rename)."""
        path = os.fspath(path)
        tmp = f"{path}.tmp{os.getpid()}"
        with open(tmp, "w", encoding="utf-8") as fh:
            fh.write(self.to_json())
        os.replace(tmp, path)

    @classmethod
    def load(cls: type[C], path: str | os.PathLike) -> C:
        with open(os.fspath(path), encoding="utf-8") as fh:
            return cls.from_json(fh.read())

    def with_(self: C, **changes: Any) -> C:
        """A copy with some fields changed (Burn's ``with_<field>`` builders in one call)."""
        return dataclasses.replace(self, **changes)


_HINTS: weakref.WeakKeyDictionary[type, dict[str, Any]] = weakref.WeakKeyDictionary()


def _hints(cls: type) -> dict[str, Any]:
    """Field annotations resolved to types (string annotations included); a field whose annotation
    cannot be resolved (a name local to a function, say) is left out, so it is neither checked nor typed
    on load."""
    cached = _HINTS.get(cls)
    if cached is not None:
        return cached
    try:
        hints = typing.get_type_hints(cls)
    except Exception:
        return _hints_by_field(cls)  # not cached: a later call may resolve what is missing now
    _HINTS[cls] = hints
    return hints


def _hints_by_field(cls: type) -> dict[str, Any]:
    hints: dict[str, Any] = {}
    for klass in reversed(cls.__mro__):
        module = sys.modules.get(klass.__module__)
        globalns = vars(module) if module is not None else {}
        for name, ann in inspect.get_annotations(klass).items():
            if isinstance(ann, str):
                try:
                    ann = eval(ann, globalns, dict(vars(klass)))  # as typing.get_type_hints does
                except Exception:
                    hints.pop(name, None)
                    continue
            hints[name] = ann
    return hints


def _check_fields(config: Config) -> None:
    """Check every field against its annotation; store normalized values (see the module docstring)."""
    cls = type(config)
    hints = _hints(cls)
    for f in dataclasses.fields(config):
        tp = hints.get(f.name)
        if tp is None or not hasattr(config, f.name):
            continue
        value = getattr(config, f.name)
        try:
            fitted = fit(value, tp)
        except NoFit:
            raise ConfigTypeError(
                f"{cls.__name__}: field {f.name!r} must be {type_name(tp)}, "
                f"got {_short_repr(value)} ({type(value).__name__})"
            ) from None
        if fitted is not value:
            object.__setattr__(config, f.name, fitted)  # frozen configs too


def _short_repr(value: Any, limit: int = 80) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _config_types(tp: Any) -> list[type[Config]]:
    """Config classes named by an annotation (``X``, ``X | None``, ``Union[X, Y]``)."""
    if isinstance(tp, type) and issubclass(tp, Config):
        return [tp]
    if typing.get_origin(tp) in (Union, types.UnionType):
        return [a for a in typing.get_args(tp) if isinstance(a, type) and issubclass(a, Config)]
    return []


def _encode(value: Any, tp: Any) -> Any:
    if isinstance(value, Config):
        out = value.to_dict()
        declared = _config_types(tp)
        if len(declared) != 1 or type(value) is not declared[0]:
            out = {_TYPE_KEY: type(value).__name__, **out}
        return out
    if isinstance(value, (list, tuple)):
        return [_encode(v, None) for v in value]
    if isinstance(value, dict):
        return {str(k): _encode(v, None) for k, v in value.items()}
    if hasattr(value, "is_float") and hasattr(value, "name"):  # a burn DType
        return value.name
    if isinstance(value, enum.Enum):  # loads back through the field's annotation
        return _encode(value.value, None)
    return value


def _class_named(name: Any, bases: tuple[type, ...], module: str | None = None) -> type[Config] | None:
    """The config class called ``name`` among subclasses of ``bases``: one from ``module`` (the module of
    the config holding the field) first, else the first defined."""
    found = [c for c in _REGISTRY.get(name, ()) if issubclass(c, bases)] if isinstance(name, str) else []
    local = [c for c in found if c.__module__ == module]
    candidates = local or found
    return candidates[0] if candidates else None


def _decode_tagged(value: dict[str, Any], declared: list[type[Config]], owner: type, where: str) -> Config:
    """A ``{"__config__": name, ...}`` object, as the class of that name the field can hold."""
    bases = tuple(declared) or (Config,)
    target = _class_named(value[_TYPE_KEY], bases, owner.__module__)
    if target is None:
        expected = " | ".join(b.__name__ for b in bases)
        raise ConfigError(f"{where}: unknown config class {value[_TYPE_KEY]!r} (expected a {expected})")
    return target.from_dict(value)


def _decode(value: Any, tp: Any, owner: type, where: str) -> Any:
    if isinstance(value, dict):
        declared = _config_types(tp)
        if _TYPE_KEY in value:
            return _decode_tagged(value, declared, owner, where)
        if declared:
            return declared[0].from_dict(value)
        return value
    if isinstance(value, list):
        items = [
            _decode_tagged(v, [], owner, where) if isinstance(v, dict) and _TYPE_KEY in v else v
            for v in value
        ]
        origin = typing.get_origin(tp)
        if tp is tuple or origin is tuple or _union_has(tp, tuple):
            return tuple(items)
        return items
    return value


def _union_has(tp: Any, kind: type) -> bool:
    if typing.get_origin(tp) in (Union, types.UnionType):
        return any(a is kind or typing.get_origin(a) is kind for a in typing.get_args(tp))
    return False


def check(cond: bool, owner: str, message: str) -> None:
    """Raise ``ConfigError(f"{owner}: {message}")`` unless ``cond`` (used by every ``init``).

    >>> from burn.config import check
    >>> check(3 > 0, "MyConfig", "width must be positive, got 3")   # passes: nothing happens
    >>> try:
    ...     check(0 > 0, "MyConfig", "width must be positive, got 0")
    ... except burn.ConfigError as exc:
    ...     print(exc)
    MyConfig: width must be positive, got 0
    """
    if not cond:
        raise ConfigError(f"{owner}: {message}")
