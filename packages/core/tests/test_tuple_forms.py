"""PyTorch's argument forms for every conv and pool (issue 32): kernel_size, stride, padding, dilation
and output padding as an int or a tuple (or list) of one entry per spatial dim, 1-tuples for 1-d. Each
config and each functional gives the same module/result for the int and the tuple forms (numpy backend),
refuses a wrong length or type with an error naming the argument and what was expected, and, where
PyTorch is installed, agrees with PyTorch on the same forms."""

from __future__ import annotations

from typing import Any

import burn
import numpy as np
import pytest
from burn import nn
from burn.nn import functional as F

RNG = np.random.default_rng(32)

# config, its required arguments, its rank; FIELDS: the tuple fields beside kernel_size, as ints
CONV = [
    (nn.Conv1dConfig, (2, 4), 1),
    (nn.Conv2dConfig, ((2, 4),), 2),
    (nn.Conv3dConfig, ((2, 4),), 3),
    (nn.DeformConv2dConfig, ((2, 4),), 2),
]
CONV_T = [
    (nn.ConvTranspose1dConfig, ((2, 4),), 1),
    (nn.ConvTranspose2dConfig, ((2, 4),), 2),
    (nn.ConvTranspose3dConfig, ((2, 4),), 3),
]
POOLS = [
    (nn.MaxPool1dConfig, (), 1),
    (nn.MaxPool2dConfig, (), 2),
    (nn.MaxPool3dConfig, (), 3),
    (nn.AvgPool1dConfig, (), 1),
    (nn.AvgPool2dConfig, (), 2),
    (nn.AvgPool3dConfig, (), 3),
]
FIELDS: dict[type, dict[str, int]] = {}
for cls, _, _ in CONV:
    FIELDS[cls] = {"stride": 2, "padding": 1, "dilation": 2}
for cls, _, _ in CONV_T:
    FIELDS[cls] = {"stride": 2, "padding": 1, "dilation": 1, "padding_out": 1}
for cls, _, _ in POOLS:
    FIELDS[cls] = {"stride": 2, "padding": 1}
    if "Max" in cls.__name__:
        FIELDS[cls]["dilation"] = 2
ALL = CONV + CONV_T + POOLS


def _input(cls: type, n: int) -> burn.Tensor:
    channels = 1 if "Pool" in cls.__name__ else 2
    return burn.tensor(RNG.standard_normal((1, channels) + (7,) * n).astype(np.float32))


def _run(cls: type, module: nn.Module, x: burn.Tensor) -> np.ndarray:
    if cls is nn.DeformConv2dConfig:  # offsets (N, 2 * 3 * 3, 3, 3): 7 wide, stride 2, padding 1, dilation 2
        offset = burn.tensor(np.random.default_rng(0).standard_normal((1, 18, 3, 3)).astype(np.float32))
        return module(x, offset).numpy()
    return module(x).numpy()


def _same_weights(a: nn.Module, b: nn.Module) -> nn.Module:
    b.load_record(a.record())
    return b


@pytest.mark.parametrize(("cls", "args", "n"), ALL, ids=[c[0].__name__ for c in ALL])
def test_int_tuple_and_list_forms_build_the_same_module(cls: type, args: tuple, n: int) -> None:
    ints = FIELDS[cls]
    as_int = cls(*args, kernel_size=3, **ints).init()
    as_tuple = cls(*args, kernel_size=(3,) * n, **{k: (v,) * n for k, v in ints.items()}).init()
    as_list = cls(*args, kernel_size=[3] * n, **{k: [v] * n for k, v in ints.items()}).init()
    for name in ("kernel_size", *ints):
        assert (
            getattr(as_int, name)
            == getattr(as_tuple, name)
            == getattr(as_list, name)
            == (((3,) if name == "kernel_size" else (ints[name],)) * n)
        )
    x = _input(cls, n)
    want = _run(cls, as_int, x)
    np.testing.assert_array_equal(_run(cls, _same_weights(as_int, as_tuple), x), want)
    np.testing.assert_array_equal(_run(cls, _same_weights(as_int, as_list), x), want)


@pytest.mark.parametrize(("cls", "args", "n"), ALL, ids=[c[0].__name__ for c in ALL])
def test_wrong_lengths_and_types_name_the_argument(cls: type, args: tuple, n: int) -> None:
    for name in ("kernel_size", *FIELDS[cls]):
        others = {} if name == "kernel_size" else {"kernel_size": 3}
        for bad in ((2,) * (n + 1), (2,) * (n - 1) if n > 1 else (), 1.5, True, "2", (2.0,) * n):
            with pytest.raises(burn.ConfigError, match=rf"{cls.__name__}: field '{name}' must be "):
                cls(*args, **others, **{name: bad})


def test_conv_padding_strings_and_bad_strings() -> None:
    for cls, args, n in CONV[:3]:
        same = cls(*args, kernel_size=3, padding="same").init()
        assert same.padding == (1,) * n
        assert cls(*args, kernel_size=3, padding="valid").init().padding == (0,) * n
        with pytest.raises(burn.ConfigError, match=r"field 'padding' must be .*Literal\['valid', 'same'\]"):
            cls(*args, kernel_size=3, padding="full")


def test_adaptive_avg_pool1d_takes_a_one_tuple() -> None:
    x = _input(nn.AdaptiveAvgPool1dConfig, 1)
    a, b = nn.AdaptiveAvgPool1dConfig((3,)).init(), nn.AdaptiveAvgPool1dConfig(3).init()
    assert a.output_size == b.output_size == (3,)
    np.testing.assert_array_equal(a(x).numpy(), b(x).numpy())
    with pytest.raises(burn.ConfigError, match="output_size"):
        nn.AdaptiveAvgPool1dConfig((3, 3))


# functionals: name, rank, the tuple arguments with their int values
FUNCTIONALS: list[tuple[str, int, dict[str, int]]] = [
    ("conv1d", 1, {"stride": 2, "padding": 1, "dilation": 2}),
    ("conv2d", 2, {"stride": 2, "padding": 1, "dilation": 2}),
    ("conv3d", 3, {"stride": 2, "padding": 1, "dilation": 2}),
    ("conv_transpose1d", 1, {"stride": 2, "padding": 1, "output_padding": 1, "dilation": 1}),
    ("conv_transpose2d", 2, {"stride": 2, "padding": 1, "output_padding": 1, "dilation": 1}),
    ("conv_transpose3d", 3, {"stride": 2, "padding": 1, "output_padding": 1, "dilation": 1}),
    ("max_pool1d", 1, {"kernel_size": 3, "stride": 2, "padding": 1, "dilation": 2}),
    ("max_pool2d", 2, {"kernel_size": 3, "stride": 2, "padding": 1, "dilation": 2}),
    ("max_pool3d", 3, {"kernel_size": 3, "stride": 2, "padding": 1, "dilation": 2}),
    ("avg_pool1d", 1, {"kernel_size": 3, "stride": 2, "padding": 1}),
    ("avg_pool2d", 2, {"kernel_size": 3, "stride": 2, "padding": 1}),
    ("avg_pool3d", 3, {"kernel_size": 3, "stride": 2, "padding": 1}),
    ("deform_conv2d", 2, {"stride": 2, "padding": 1, "dilation": 2}),
]


def _functional_args(name: str, n: int) -> list[Any]:
    x = burn.tensor(RNG.standard_normal((1, 2) + (7,) * n).astype(np.float32))
    if "pool" in name:
        return [x]
    w = (2, 3) if "transpose" in name else (3, 2)
    weight = burn.tensor(RNG.standard_normal(w + (3,) * n).astype(np.float32))
    if name == "deform_conv2d":  # offsets for a (7 + 2 - 4 - 1) // 2 + 1 = 3 output, not all zero
        offset = burn.tensor(RNG.standard_normal((1, 18, 3, 3)).astype(np.float32) * 0.5)
        return [x, offset, weight]
    return [x, weight]


@pytest.mark.parametrize(("name", "n", "ints"), FUNCTIONALS, ids=[f[0] for f in FUNCTIONALS])
def test_functionals_take_ints_tuples_and_lists(name: str, n: int, ints: dict[str, int]) -> None:
    fn, args = getattr(F, name), _functional_args(name, n)
    want = fn(*args, **ints).numpy()
    np.testing.assert_array_equal(fn(*args, **{k: (v,) * n for k, v in ints.items()}).numpy(), want)
    np.testing.assert_array_equal(fn(*args, **{k: [v] * n for k, v in ints.items()}).numpy(), want)
    for arg in ints:
        for bad in ((1,) * (n + 1), 1.5, "1"):
            with pytest.raises(TypeError, match=rf"^{name}: {arg} must be an int or a tuple of {n} int"):
                fn(*args, **{**ints, arg: bad})


# ---------------------------------------------------------------- PyTorch, where it is installed
TORCH_MODULES = [  # burn config, its torch module (burn's padding_out is torch's output_padding)
    (nn.Conv1dConfig, "Conv1d"),
    (nn.Conv2dConfig, "Conv2d"),
    (nn.Conv3dConfig, "Conv3d"),
    (nn.ConvTranspose1dConfig, "ConvTranspose1d"),
    (nn.ConvTranspose2dConfig, "ConvTranspose2d"),
    (nn.ConvTranspose3dConfig, "ConvTranspose3d"),
    (nn.MaxPool1dConfig, "MaxPool1d"),
    (nn.MaxPool2dConfig, "MaxPool2d"),
    (nn.MaxPool3dConfig, "MaxPool3d"),
    (nn.AvgPool1dConfig, "AvgPool1d"),
    (nn.AvgPool2dConfig, "AvgPool2d"),
    (nn.AvgPool3dConfig, "AvgPool3d"),
]


@pytest.mark.parametrize(("cls", "torch_name"), TORCH_MODULES, ids=[t[1] for t in TORCH_MODULES])
def test_tuple_forms_match_torch(cls: type, torch_name: str) -> None:
    torch = pytest.importorskip("torch")
    args, n = next((a, k) for c, a, k in ALL if c is cls)
    forms = {"kernel_size": (3,) * n, **{k: (v,) * n for k, v in FIELDS[cls].items()}}
    module = cls(*args, **forms).init()
    torch_forms = {("output_padding" if k == "padding_out" else k): v for k, v in forms.items()}
    if "Conv" in torch_name:
        c_in, c_out = (args[0], args[1]) if cls is nn.Conv1dConfig else args[0]
        ref = getattr(torch.nn, torch_name)(c_in, c_out, **torch_forms)
        with torch.no_grad():
            ref.weight.copy_(torch.from_numpy(module.weight.val().numpy()))
            ref.bias.copy_(torch.from_numpy(module.bias.val().numpy()))
    else:
        ref = getattr(torch.nn, torch_name)(**torch_forms)  # torch's stride default differs: given here
    x = _input(cls, n)
    want = ref(torch.from_numpy(x.numpy())).detach().numpy()
    np.testing.assert_allclose(module(x).numpy(), want, rtol=1e-5, atol=1e-5)
    for bad_len in ((2,) * (n + 1),):  # torch refuses a wrong length too (at build or at call)
        with pytest.raises(burn.ConfigError):
            cls(*args, **{**forms, "stride": bad_len})
        with pytest.raises((RuntimeError, ValueError, TypeError)):
            bad = getattr(torch.nn, torch_name)
            made = (
                bad(c_in, c_out, **{**torch_forms, "stride": bad_len})
                if "Conv" in torch_name
                else bad(**{**torch_forms, "stride": bad_len})
            )
            made(torch.from_numpy(x.numpy()))
