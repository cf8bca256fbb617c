"""Config field values checked against their annotations: ``fit(value, annotation)`` returns the value
(normalized: an int or a numpy scalar in a float field becomes a float, a list in a tuple field a tuple)
or raises ``NoFit``. One small rule per kind of annotation, looked up in two tables (plain types and
generic origins); an annotation the tables do not know is checked with ``isinstance`` when it is a class
and accepted otherwise, so an exotic annotation never rejects a value it cannot judge.

``True`` is not an int (nor a float) here, although Python says ``bool`` subclasses ``int``: a flag
passed where a size is expected is a mistake worth reporting.
"""

from __future__ import annotations

import collections.abc
import enum
import numbers
import types
import typing
from collections.abc import Callable
from typing import Any, Literal, Union

from .._dtype import DType, dtype


class NoFit(Exception):
    """The value does not fit the annotation (caught by Config, which raises ConfigTypeError)."""


def fit(value: Any, tp: Any) -> Any:
    """``value`` checked against annotation ``tp`` and normalized; raises ``NoFit``."""
    return _fit(value, tp, lenient=True)


def type_name(tp: Any) -> str:
    """An annotation as users write it: ``tuple[int, int] | int``, ``float | None``, ``Literal['a']``."""
    if tp is None or tp is type(None):
        return "None"
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if origin in (Union, types.UnionType):
        return " | ".join(type_name(a) for a in args)
    if origin is Literal:
        return f"Literal[{', '.join(repr(a) for a in args)}]"
    if origin is not None:
        name = getattr(origin, "__name__", str(origin))
        inner = ", ".join("..." if a is Ellipsis else type_name(a) for a in args)
        return f"{name}[{inner}]" if args else name
    if isinstance(tp, type):
        return tp.__name__
    return str(tp)


# ---------------------------------------------------------------- plain types: (value, lenient) -> value


def _is_numpy_scalar(value: Any, kinds: str) -> bool:
    dt = getattr(value, "dtype", None)
    return type(value).__module__ == "numpy" and getattr(dt, "kind", None) in tuple(kinds)


def _fit_bool(value: Any, lenient: bool) -> Any:
    if isinstance(value, bool):
        return value
    if lenient and _is_numpy_scalar(value, "b"):
        return bool(value)
    raise NoFit


def _fit_int(value: Any, lenient: bool) -> Any:
    if isinstance(value, bool):
        raise NoFit
    if isinstance(value, int):
        return value
    if lenient and isinstance(value, numbers.Integral):  # numpy integers
        return int(value)
    raise NoFit


def _fit_float(value: Any, lenient: bool) -> Any:
    if isinstance(value, bool):
        raise NoFit
    if isinstance(value, float):
        return value
    if lenient and isinstance(value, numbers.Real):  # ints, numpy floats and ints
        return float(value)
    raise NoFit


def _fit_dtype(value: Any, lenient: bool) -> Any:
    if isinstance(value, DType):
        return value
    if lenient and isinstance(value, str):  # how to_json writes a dtype
        try:
            return dtype(value)
        except TypeError:
            raise NoFit from None
    raise NoFit


def _fit_any(value: Any, lenient: bool) -> Any:
    return value


_PLAIN: dict[Any, Callable[[Any, bool], Any]] = {
    bool: _fit_bool,
    int: _fit_int,
    float: _fit_float,
    DType: _fit_dtype,
    Any: _fit_any,
    object: _fit_any,
}


# ---------------------------------------------------------------- generic origins: (value, args, lenient)


def _fit_union(value: Any, args: tuple, lenient: bool) -> Any:
    # an exact member wins over a conversion: 1 stays an int in `int | float`
    for attempt in (False, True) if lenient else (False,):
        for arg in args:
            try:
                return _fit(value, arg, attempt)
            except NoFit:
                pass
    raise NoFit


def _fit_literal(value: Any, args: tuple, lenient: bool) -> Any:
    if any(type(value) is type(a) and value == a for a in args):
        return value
    raise NoFit


def _fit_items(value: Any, item_types: list[Any], kind: type[Any], lenient: bool) -> Any:
    items = [_fit(v, t, lenient) for v, t in zip(value, item_types)]
    if isinstance(value, kind) and all(a is b for a, b in zip(items, value)):
        return value  # unchanged (keeps a namedtuple a namedtuple)
    return kind(items)


def _fit_tuple(value: Any, args: tuple, lenient: bool) -> Any:
    if not (isinstance(value, tuple) or (lenient and isinstance(value, list))):
        raise NoFit
    if not args:
        return value if isinstance(value, tuple) else tuple(value)
    if len(args) == 2 and args[1] is Ellipsis:
        return _fit_items(value, [args[0]] * len(value), tuple, lenient)
    if len(value) != len(args):
        raise NoFit
    return _fit_items(value, list(args), tuple, lenient)


def _fit_list(value: Any, args: tuple, lenient: bool) -> Any:
    if not (isinstance(value, list) or (lenient and isinstance(value, tuple))):
        raise NoFit
    return _fit_items(value, [args[0] if args else Any] * len(value), list, lenient)


def _fit_set(value: Any, args: tuple, lenient: bool, kind: type) -> Any:
    if not isinstance(value, (set, frozenset)):
        raise NoFit
    item = args[0] if args else Any
    return kind(_fit(v, item, lenient) for v in value)


def _fit_dict(value: Any, args: tuple, lenient: bool) -> Any:
    if not isinstance(value, dict):
        raise NoFit
    if not args:
        return value
    key, item = args
    fitted = {_fit(k, key, lenient): _fit(v, item, lenient) for k, v in value.items()}
    same = all(a is b for a, b in zip(fitted.values(), value.values())) and list(fitted) == list(value)
    return value if same else fitted


def _fit_callable(value: Any, args: tuple, lenient: bool) -> Any:
    if callable(value):
        return value
    raise NoFit


def _fit_type(value: Any, args: tuple, lenient: bool) -> Any:
    target = args[0] if args else object
    if isinstance(value, type) and (not isinstance(target, type) or issubclass(value, target)):
        return value
    raise NoFit


_GENERIC: dict[Any, Callable[[Any, tuple, bool], Any]] = {
    Union: _fit_union,
    types.UnionType: _fit_union,
    Literal: _fit_literal,
    tuple: _fit_tuple,
    list: _fit_list,
    set: lambda v, a, lenient: _fit_set(v, a, lenient, set),
    frozenset: lambda v, a, lenient: _fit_set(v, a, lenient, frozenset),
    dict: _fit_dict,
    collections.abc.Callable: _fit_callable,
    type: _fit_type,
}


def _fit(value: Any, tp: Any, lenient: bool) -> Any:
    if tp is None or tp is type(None):
        if value is None:
            return value
        raise NoFit
    rule = _PLAIN.get(tp) if _hashable(tp) else None
    if rule is not None:
        return rule(value, lenient)
    origin = typing.get_origin(tp)
    if origin is None and tp in (tuple, list, dict, set, frozenset, type, collections.abc.Callable):
        origin = tp  # the bare builtin: any items
    generic = _GENERIC.get(origin) if origin is not None else None
    if generic is not None:
        return generic(value, typing.get_args(tp), lenient)
    if hasattr(tp, "__supertype__"):  # typing.NewType
        return _fit(value, tp.__supertype__, lenient)
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        return _fit_enum(value, tp, lenient)
    target = origin if isinstance(origin, type) else tp
    if isinstance(target, type):
        try:
            ok = isinstance(value, target)
        except TypeError:  # a non-runtime Protocol and the like: cannot be judged
            return value
        if ok:
            return value
        raise NoFit
    return value  # a TypeVar, an unresolved forward reference, ...


def _fit_enum(value: Any, tp: type[enum.Enum], lenient: bool) -> Any:
    if isinstance(value, tp):
        return value
    if lenient:
        try:
            return tp(value)  # by value: how to_json writes an enum
        except ValueError:
            if isinstance(value, str) and value in tp.__members__:
                return tp[value]
    raise NoFit


def _hashable(tp: Any) -> bool:
    try:
        hash(tp)
    except TypeError:
        return False
    return True
