"""``burn.config.Config``: a dataclass base with JSON save/load and nested configs (Burn's ``#[derive(Config)]``).

Subclasses are made dataclasses automatically, so a config reads like a plain annotated class::

    class MlpConfig(Config):
        d_hidden: int = 64
        linear: LinearConfig = field(default_factory=lambda: LinearConfig(4, 8))

Nested configs become nested JSON objects. A field whose value is a subclass of its declared type (an
initializer in a ``LinearConfig``, say) is written with a ``"__config__"`` key naming the class, so it
loads back as the same class.
"""

from __future__ import annotations

import dataclasses
import json
import os
import types
import typing
from typing import Any, ClassVar, TypeVar, Union

from .._errors import ConfigError

C = TypeVar("C", bound="Config")

_REGISTRY: dict[str, type[Config]] = {}
_TYPE_KEY = "__config__"


class Config:
    """Base of every config: a dataclass with ``to_json``, ``save(path)``, ``load(path)``.

    >>> class MyConfig(Config):
    ...     width: int = 8
    >>> MyConfig.from_json(MyConfig(width=3).to_json()).width
    3
    """

    _frozen: ClassVar[bool] = False

    def __init_subclass__(cls, frozen: bool | None = None, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if frozen is not None:
            cls._frozen = frozen
        # a fresh dataclass per subclass (a later @dataclass decorator simply redoes it)
        dataclasses.dataclass(cls, frozen=cls._frozen)
        _REGISTRY.setdefault(cls.__name__, cls)

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
            target = _REGISTRY.get(name)
            if target is None or not issubclass(target, cls):
                raise ConfigError(f"{cls.__name__}.from_dict: unknown config class {name!r}")
        hints = _hints(target)
        names = {f.name for f in dataclasses.fields(target)}
        unknown = sorted(set(data) - names)
        if unknown:
            raise ConfigError(
                f"{target.__name__}: unknown field(s) {unknown}; expected some of {sorted(names)}"
            )
        kwargs = {k: _decode(v, hints.get(k), f"{target.__name__}.{k}") for k, v in data.items()}
        try:
            return target(**kwargs)
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


def _hints(cls: type) -> dict[str, Any]:
    try:
        return typing.get_type_hints(cls)
    except Exception:  # unresolvable forward refs: fall back to untyped decoding
        return {}


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
    return value


def _decode(value: Any, tp: Any, where: str) -> Any:
    if isinstance(value, dict):
        if _TYPE_KEY in value:
            return Config.from_dict(value)
        declared = _config_types(tp)
        if declared:
            return declared[0].from_dict(value)
        return value
    if isinstance(value, list):
        items = [Config.from_dict(v) if isinstance(v, dict) and _TYPE_KEY in v else v for v in value]
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
    """Raise ``ConfigError(f"{owner}: {message}")`` unless ``cond`` (used by every ``init``)."""
    if not cond:
        raise ConfigError(f"{owner}: {message}")
