"""burn.config.Config: dataclass subclasses, JSON round trips, nested and polymorphic configs."""

import dataclasses

import burn
import pytest
from burn.config import Config, field


class Inner(Config):
    width: int = 4
    rate: float = 0.5


class Special(Inner):
    extra: str = "x"


class Outer(Config):
    name: str
    inner: Inner = field(default_factory=Inner)
    sizes: tuple[int, int] = (1, 2)
    maybe: Inner | None = None
    items: list = field(default_factory=list)


def test_subclasses_are_dataclasses_with_equality():
    assert dataclasses.is_dataclass(Outer)
    assert Outer("a") == Outer("a") and Outer("a") != Outer("b")
    assert Outer("a").with_(name="b").name == "b"


def test_json_round_trip_nested_and_polymorphic(tmp_path):
    c = Outer("run", Special(width=8, extra="y"), (3, 4), Inner(1, 0.1), [Inner(2)])
    back = Outer.from_json(c.to_json())
    assert back == c
    assert type(back.inner) is Special and isinstance(back.sizes, tuple) and type(back.items[0]) is Inner
    path = tmp_path / "c.json"
    c.save(path)
    assert Outer.load(path) == c
    assert not list(tmp_path.glob("*.tmp*"))


def test_bad_input_raises_config_error():
    with pytest.raises(burn.ConfigError, match="unknown field"):
        Outer.from_dict({"name": "a", "nope": 1})
    with pytest.raises(burn.ConfigError, match="invalid JSON"):
        Outer.from_json("{")
    with pytest.raises(burn.ConfigError, match="Outer"):
        Outer.from_dict({})
    with pytest.raises(burn.ConfigError, match="unknown config class"):
        Outer.from_dict({"name": "a", "inner": {"__config__": "Nope"}})
