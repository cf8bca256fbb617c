"""Config fields are checked against their annotations when a config is built, by hand or from JSON
(issue 13: ``MyCfg.from_json('{"width": "four"}')`` was accepted, and a string ``d_output`` surfaced as a
raw TypeError from ``>`` inside ``LinearConfig.init``)."""

from __future__ import annotations

import enum
import json
import types
from typing import Any, Literal, Optional

import burn
import numpy as np
import pytest
from burn import nn
from burn.config import Config, ConfigTypeError, field

CPU = burn.device("cpu")


class Inner(Config):
    width: int = 4
    rate: float = 0.5


class Special(Inner):
    extra: str = "x"


class Mode(enum.Enum):
    FAST = "fast"
    SLOW = "slow"


class Typed(Config):
    width: int = 4
    rate: float = 0.5
    flag: bool = False
    name: str = "a"
    maybe: float | None = None
    old_style: Optional[int] = None  # noqa: UP045 - the typing spelling is checked as well
    either: int | float = 1
    padding: tuple[int, int] | int | str = 0
    dims: tuple[int, ...] = ()
    sizes: list[int] = field(default_factory=list)
    rates: list[float] = field(default_factory=list)
    table: dict[str, int] = field(default_factory=dict)
    kind: Literal["a", "b"] = "a"
    inner: Inner = field(default_factory=Inner)
    inner_or_none: Inner | None = None
    mode: Mode = Mode.FAST
    dtype: burn.DType = burn.float32
    anything: Any = None


def test_the_issue_cases_raise_config_error_naming_class_field_type_and_value():
    class MyCfg(Config):
        width: int = 8

    with pytest.raises(ConfigTypeError) as info:
        MyCfg.from_json('{"width": "four"}')
    assert str(info.value) == "MyCfg: field 'width' must be int, got 'four' (str)"

    with pytest.raises(burn.ConfigError) as info:
        nn.LinearConfig.from_json('{"d_input": 2, "d_output": "3"}').init(CPU)
    assert str(info.value) == "LinearConfig: field 'd_output' must be int, got '3' (str)"


def test_config_type_error_is_a_config_error_a_value_error_and_a_type_error():
    for base in (burn.ConfigError, burn.BurnError, ValueError, TypeError):
        with pytest.raises(base):
            Inner(width="four")


@pytest.mark.parametrize(
    "kwargs, expected",
    [
        (dict(width=True), "field 'width' must be int, got True (bool)"),
        (dict(width=4.0), "field 'width' must be int, got 4.0 (float)"),
        (dict(width=None), "field 'width' must be int, got None (NoneType)"),
        (dict(rate=False), "field 'rate' must be float, got False (bool)"),
        (dict(rate="0.5"), "field 'rate' must be float, got '0.5' (str)"),
        (dict(flag=1), "field 'flag' must be bool, got 1 (int)"),
        (dict(name=3), "field 'name' must be str, got 3 (int)"),
        (dict(maybe="x"), "field 'maybe' must be float | None, got 'x' (str)"),
        (dict(old_style=1.5), "field 'old_style' must be int | None, got 1.5 (float)"),
        (dict(either="1"), "field 'either' must be int | float, got '1' (str)"),
        (
            dict(padding=(1, 2, 3)),
            "field 'padding' must be tuple[int, int] | int | str, got (1, 2, 3) (tuple)",
        ),
        (dict(padding=(1, "a")), "field 'padding' must be tuple[int, int] | int | str, got (1, 'a') (tuple)"),
        (dict(padding=1.5), "field 'padding' must be tuple[int, int] | int | str, got 1.5 (float)"),
        (dict(dims=(1, "2")), "field 'dims' must be tuple[int, ...], got (1, '2') (tuple)"),
        (dict(dims=3), "field 'dims' must be tuple[int, ...], got 3 (int)"),
        (dict(sizes=["a"]), "field 'sizes' must be list[int], got ['a'] (list)"),
        (dict(sizes=[True]), "field 'sizes' must be list[int], got [True] (list)"),
        (dict(table={"a": "b"}), "field 'table' must be dict[str, int], got {'a': 'b'} (dict)"),
        (dict(kind="c"), "field 'kind' must be Literal['a', 'b'], got 'c' (str)"),
        (dict(inner={"width": 3}), "field 'inner' must be Inner, got {'width': 3} (dict)"),
        (dict(inner_or_none=Typed()), "field 'inner_or_none' must be Inner | None, got Typed("),
        (dict(mode="medium"), "field 'mode' must be Mode, got 'medium' (str)"),
        (dict(dtype="float99"), "field 'dtype' must be DType, got 'float99' (str)"),
    ],
)
def test_wrong_types_are_rejected_at_construction(kwargs, expected):
    with pytest.raises(ConfigTypeError, match=r"^Typed: ") as info:
        Typed(**kwargs)
    assert str(info.value).startswith(f"Typed: {expected}")


def test_right_types_are_accepted_and_normalized():
    c = Typed(
        rate=1,  # an int is a fine float ...
        maybe=2,
        either=3,  # ... but stays an int where int is allowed
        padding=[1, 2],  # a list where a tuple is expected (JSON has no tuples)
        dims=[3, 4, 5],
        sizes=(1, 2),
        rates=[1, 2.5],
        table={"a": np.int64(7)},
        inner=Special(width=2),  # a subclass of the declared config
        mode="slow",  # an enum by value
        dtype="float64",  # a dtype by name
        anything=object,
    )
    assert c.rate == 1.0 and type(c.rate) is float
    assert c.maybe == 2.0 and type(c.maybe) is float
    assert c.either == 3 and type(c.either) is int
    assert c.padding == (1, 2) and c.dims == (3, 4, 5) and c.sizes == [1, 2]
    assert c.rates == [1.0, 2.5] and type(c.rates[0]) is float
    assert c.table == {"a": 7} and type(c.table["a"]) is int
    assert type(c.inner) is Special and c.mode is Mode.SLOW and c.dtype is burn.float64
    assert Typed(padding="same").padding == "same" and Typed(padding=2).padding == 2
    assert Typed(old_style=None).old_style is None and Typed(old_style=5).old_style == 5


def test_numpy_scalars_are_accepted_as_python_numbers_so_to_json_works():
    c = Inner(width=np.int64(3), rate=np.float32(0.25))
    assert type(c.width) is int and type(c.rate) is float
    assert json.loads(c.to_json()) == {"width": 3, "rate": 0.25}
    assert Typed(flag=np.bool_(True)).flag is True
    assert nn.LinearConfig(np.int32(2), np.int64(3)).init(CPU).weight.shape == (2, 3)


def test_json_round_trip_of_every_kind_of_field():
    c = Typed(
        width=2,
        maybe=0.5,
        padding=(1, 2),
        dims=(1,),
        sizes=[3],
        rates=[0.5],
        table={"k": 1},
        kind="b",
        inner_or_none=Special(extra="y"),
        mode=Mode.SLOW,
        dtype=burn.float16,
    )
    doc = json.loads(c.to_json())
    assert doc["mode"] == "slow" and doc["dtype"] == "float16" and doc["padding"] == [1, 2]
    back = Typed.from_json(c.to_json())
    assert back == c
    assert back.mode is Mode.SLOW and back.dtype is burn.float16 and type(back.inner_or_none) is Special


@pytest.mark.parametrize(
    "doc, expected",
    [
        ({"width": "four"}, "Typed: field 'width' must be int, got 'four' (str)"),
        ({"width": True}, "Typed: field 'width' must be int, got True (bool)"),
        ({"padding": [1, 2, 3]}, "Typed: field 'padding' must be tuple[int, int] | int | str, got (1, 2, 3)"),
        ({"inner": {"width": "w"}}, "Inner: field 'width' must be int, got 'w' (str)"),
        ({"mode": "medium"}, "Typed: field 'mode' must be Mode, got 'medium' (str)"),
    ],
)
def test_wrong_types_are_rejected_at_load(doc, expected):
    with pytest.raises(ConfigTypeError) as info:
        Typed.from_json(json.dumps(doc))
    assert str(info.value).startswith(expected)


def test_with_and_load_check_as_well(tmp_path):
    with pytest.raises(ConfigTypeError, match="field 'width' must be int, got 'x'"):
        Inner().with_(width="x")
    path = tmp_path / "inner.json"
    path.write_text('{"width": 2, "rate": "fast"}')
    with pytest.raises(ConfigTypeError, match="field 'rate' must be float, got 'fast' \\(str\\)"):
        Inner.load(path)


def test_string_annotations_of_a_class_local_to_a_function():
    class Local(Config):  # annotations are strings here (from __future__ import annotations)
        count: int = 1

    class Holder(Config):
        local: Local | None = None  # `Local` cannot be resolved from the module: not checked
        size: int = 2  # ... the other fields still are

    assert Holder(local=Local(3)).local == Local(3)
    with pytest.raises(ConfigTypeError, match="Local: field 'count' must be int, got '3'"):
        Local("3")
    with pytest.raises(ConfigTypeError, match="Holder: field 'size' must be int, got 2.5"):
        Holder(size=2.5)


def test_frozen_configs_are_normalized_and_checked():
    c = nn.init.Constant(value=1)
    assert c.value == 1.0 and type(c.value) is float
    with pytest.raises(ConfigTypeError, match="Constant: field 'value' must be float, got 'one'"):
        nn.init.Constant(value="one")


def test_a_subclass_post_init_sees_checked_values():
    # GradientClipping's own __post_init__ compares threshold > 0: the type check comes first
    with pytest.raises(ConfigTypeError, match="GradientClipping: field 'threshold' must be float, got 'x'"):
        burn.optim.GradientClipping("norm", "x")
    with pytest.raises(burn.ConfigError, match="threshold must be positive"):
        burn.optim.GradientClipping("norm", -1)


@pytest.mark.parametrize(
    "config",
    [
        nn.LinearConfig(3, 4, bias=False, initializer=nn.init.XavierNormal(gain=2)),
        nn.Conv1dConfig(2, 3, 3, padding="same"),
        nn.Conv2dConfig((2, 3), (3, 3), stride=[2, 2], padding=(1, 1)),
        nn.Conv3dConfig((1, 2), 2),
        nn.ConvTranspose2dConfig((2, 3), 2, padding_out=1),
        nn.MaxPool2dConfig(2),
        nn.AdaptiveAvgPool2dConfig((2, 2)),
        nn.BatchNormConfig(3, momentum=0.2),
        nn.MultiHeadAttentionConfig(4, 2, dropout=0),
        nn.TransformerEncoderConfig(4, 8, 2, 2),
        nn.RotaryEncodingConfig(8, 4, theta=10000),
        nn.GeluConfig(approximate="tanh"),
        nn.SequentialConfig([nn.LinearConfig(2, 3), nn.ReluConfig()]),
        burn.optim.SgdConfig(momentum=0.9, nesterov=True, weight_decay=1e-4),
        burn.optim.AdamConfig(weight_decay=0, grad_clipping=burn.optim.GradientClipping.value(1)),
        burn.optim.AdamWConfig(),
        burn.optim.AdaGradConfig(),
        burn.optim.RmsPropConfig(centered=True),
        burn.lr_scheduler.LinearLrSchedulerConfig(1, 0, 10),
        burn.lr_scheduler.CosineAnnealingLrSchedulerConfig(0.1, 10, min_lr=0),
        burn.lr_scheduler.ExponentialLrSchedulerConfig(0.1, 0.9),
        burn.lr_scheduler.NoamLrSchedulerConfig(1.0),
        burn.lr_scheduler.StepLrSchedulerConfig(0.1, 2),
    ],
    ids=lambda c: type(c).__name__,
)
def test_library_configs_build_and_round_trip(config):
    assert type(config).from_json(config.to_json()) == config


def test_scheduler_config_with_a_string_is_a_config_error_not_a_crash():
    with pytest.raises(
        ConfigTypeError, match="StepLrSchedulerConfig: field 'step_size' must be int, got 2.0"
    ):
        burn.lr_scheduler.StepLrSchedulerConfig.from_json('{"initial_lr": 0.1, "step_size": 2.0}')
    with pytest.raises(
        ConfigTypeError, match="LinearLrSchedulerConfig: field 'num_iters' must be int, got '4'"
    ):
        burn.lr_scheduler.LinearLrSchedulerConfig(0.9, 0.5, "4")


def test_a_class_name_defined_in_two_modules_loads_as_the_class_the_field_holds():
    # another module's `Special` (not an Inner): JSON names classes by their bare name
    def body(ns):
        ns.update({"__module__": "elsewhere", "__annotations__": {"z": int}, "z": 0})

    types.new_class("Special", (Config,), exec_body=body)

    class Holder(Config):
        typed: Inner | None = None
        untyped: list = field(default_factory=list)

    c = Holder(typed=Special(extra="y"), untyped=[Special(extra="z")])
    back = Holder.from_json(c.to_json())
    assert back == c and type(back.typed) is Special and type(back.untyped[0]) is Special
