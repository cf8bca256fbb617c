"""Argument checking of the module ops in ``burn.nn.functional``: one row per bad call, each with the
exception type and a piece of the message that names the op and the argument."""

from __future__ import annotations

import doctest

import burn
import pytest
from burn import DeviceError, DTypeError, IndexOutOfRangeError, ShapeError
from burn.nn import functional as F
from burn.nn.functional import _module_ops, _pool_ops


def x4(*shape, dtype=burn.float32):
    return burn.zeros(shape or (2, 3, 8, 8), dtype=dtype)


BAD_CALLS = {
    "conv2d channels": (
        lambda: F.conv2d(x4(), x4(4, 4, 3, 3)),
        ShapeError,
        "conv2d: input has 3 channels but weight expects 4 (groups=1",
    ),
    "conv2d channels groups": (
        lambda: F.conv2d(x4(2, 4, 8, 8), x4(4, 1, 3, 3), groups=2),
        ShapeError,
        "input has 4 channels but weight expects 2 (groups=2",
    ),
    "conv2d groups divide": (
        lambda: F.conv2d(x4(), x4(4, 1, 3, 3), groups=2),
        ValueError,
        "groups=2 must divide",
    ),
    "conv2d rank": (lambda: F.conv2d(x4(3, 8, 8), x4(4, 3, 3, 3)), ShapeError, "x must be 4-d (N, C, H, W)"),
    "conv1d weight rank": (lambda: F.conv1d(x4(2, 3, 8), x4(4, 3, 3, 3)), ShapeError, "weight must be 3-d"),
    "conv2d int x": (lambda: F.conv2d(x4(dtype=burn.int64), x4(4, 3, 3, 3)), DTypeError, "float tensor"),
    "conv2d dtype mismatch": (
        lambda: F.conv2d(x4(), x4(4, 3, 3, 3, dtype=burn.float64)),
        DTypeError,
        "conv2d: weight has dtype",
    ),
    "conv2d bias shape": (
        lambda: F.conv2d(x4(), x4(4, 3, 3, 3), x4(5)),
        ShapeError,
        "bias must have shape (4,)",
    ),
    "conv2d stride 0": (lambda: F.conv2d(x4(), x4(4, 3, 3, 3), stride=0), ValueError, "stride must be >= 1"),
    "conv2d padding -1": (
        lambda: F.conv2d(x4(), x4(4, 3, 3, 3), padding=-1),
        ValueError,
        "padding must be >= 0",
    ),
    "conv2d padding len": (
        lambda: F.conv2d(x4(), x4(4, 3, 3, 3), padding=(1, 1, 1)),
        TypeError,
        "padding must be",
    ),
    "conv2d dilation 0": (
        lambda: F.conv2d(x4(), x4(4, 3, 3, 3), dilation=0),
        ValueError,
        "dilation must be >= 1",
    ),
    "conv2d same stride": (
        lambda: F.conv2d(x4(), x4(4, 3, 3, 3), stride=2, padding="same"),
        ValueError,
        "stride 1",
    ),
    "conv2d output empty": (
        lambda: F.conv2d(x4(), x4(4, 3, 9, 3)),
        ShapeError,
        "conv2d: output size would be (0, 6)",
    ),
    "conv2d weight not tensor": (lambda: F.conv2d(x4(), [[1.0]]), TypeError, "weight must be a burn.Tensor"),
    "conv2d empty spatial": (lambda: F.conv2d(x4(2, 3, 0, 8), x4(4, 3, 1, 1)), ShapeError, "non-empty"),
    "conv_transpose2d channels": (
        lambda: F.conv_transpose2d(x4(), x4(4, 2, 3, 3)),
        ShapeError,
        "conv_transpose2d: input has 3 channels but weight expects 4",
    ),
    "conv_transpose2d output_padding": (
        lambda: F.conv_transpose2d(x4(), x4(3, 2, 3, 3), stride=2, output_padding=2),
        ValueError,
        "output_padding (2, 2) must be smaller than stride",
    ),
    "conv_transpose2d output empty": (
        lambda: F.conv_transpose2d(x4(2, 3, 1, 1), x4(3, 2, 1, 1), padding=1),
        ShapeError,
        "output size would be (-1, -1)",
    ),
    "max_pool2d padding": (
        lambda: F.max_pool2d(x4(), 3, padding=2),
        ValueError,
        "at most half the kernel size",
    ),
    "max_pool2d kernel 0": (lambda: F.max_pool2d(x4(), 0), ValueError, "kernel_size must be >= 1"),
    "max_pool2d too big": (
        lambda: F.max_pool2d(x4(), 9),
        ShapeError,
        "max_pool2d: output size would be (0, 0)",
    ),
    "max_pool2d bool": (lambda: F.max_pool2d(x4(dtype=burn.bool), 2), DTypeError, "numeric tensor"),
    "max_pool1d rank": (lambda: F.max_pool1d(x4(), 2), ShapeError, "x must be 3-d (N, C, L)"),
    "avg_pool2d int": (lambda: F.avg_pool2d(x4(dtype=burn.int32), 2), DTypeError, "float tensor"),
    "avg_pool1d stride": (lambda: F.avg_pool1d(x4(2, 3, 8), 2, stride=0), ValueError, "stride must be >= 1"),
    "adaptive output 0": (
        lambda: F.adaptive_avg_pool2d(x4(), (0, 2)),
        ValueError,
        "output_size must be >= 1",
    ),
    "adaptive output len": (
        lambda: F.adaptive_max_pool2d(x4(), (2, 2, 2)),
        ValueError,
        "output_size must be",
    ),
    "interpolate mode": (
        lambda: F.interpolate(x4(), size=4, mode="linear"),
        ValueError,
        "mode must be one of",
    ),
    "interpolate both": (lambda: F.interpolate(x4(), size=4, scale_factor=2), ValueError, "exactly one of"),
    "interpolate none": (lambda: F.interpolate(x4()), ValueError, "exactly one of"),
    "interpolate align nearest": (
        lambda: F.interpolate(x4(), size=4, align_corners=True),
        ValueError,
        "leave it None for 'nearest'",
    ),
    "interpolate size 0": (lambda: F.interpolate(x4(), size=(0, 3)), ValueError, "size must be >= 1"),
    "interpolate tiny scale": (
        lambda: F.interpolate(x4(), scale_factor=0.1),
        ShapeError,
        "output size would be",
    ),
    "interpolate rank": (lambda: F.interpolate(x4(2, 3, 4, 4, 4), size=2), ShapeError, "x must be 3-d"),
    "embedding index dtype": (lambda: F.embedding(x4(2, 3), x4(5, 4)), DTypeError, "integer tensor"),
    "embedding weight rank": (
        lambda: F.embedding(burn.tensor([1]), x4(5)),
        ShapeError,
        "weight must be 2-d (num_embeddings, dim)",
    ),
    "embedding range": (
        lambda: F.embedding(burn.tensor([0, 5]), x4(5, 4)),
        IndexOutOfRangeError,
        "index 5 out of range for a weight with 5 rows",
    ),
    "embedding negative": (
        lambda: F.embedding(burn.tensor([-1]), x4(5, 4)),
        IndexOutOfRangeError,
        "index -1",
    ),
    "unfold4d rank": (lambda: F.unfold4d(x4(2, 3, 8), 2), ShapeError, "unfold4d: x must be 4-d"),
    "unfold4d too big": (lambda: F.unfold4d(x4(), (9, 2)), ShapeError, "output size would be (0, 7)"),
}


@pytest.mark.parametrize("case", BAD_CALLS)
def test_bad_arguments_raise_clear_errors(case):
    call, exc, fragment = BAD_CALLS[case]
    with pytest.raises(exc) as info:
        call()
    assert fragment in str(info.value)


def test_weight_on_another_device():
    class Elsewhere(type(burn.device("cpu").backend)):
        pass

    from burn._tensor import _wrap

    w = _wrap(x4(4, 3, 3, 3).primitive, Elsewhere())
    with pytest.raises(DeviceError, match="conv2d: weight is on"):
        F.conv2d(x4(), w)


@pytest.mark.parametrize("module", [_module_ops, _pool_ops])
def test_docstring_examples(module):
    finder = doctest.DocTestFinder()
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    tests = [t for t in finder.find(module, globs={"burn": burn, "F": F}) if t.examples]
    assert tests
    for t in tests:
        runner.run(t)
    assert runner.summarize(verbose=False).failed == 0


def test_window_arguments_are_checked_the_same_after_a_good_call():
    """The plain-int answers are remembered (a layer passes the same ones every call); a bool, a tuple
    holding one or a bad value still fails afterwards, and a list still works."""
    x = x4()
    assert F.max_pool2d(x, 2, 2).shape == (2, 3, 4, 4)
    assert F.max_pool2d(x, (2, 2), [2, 2]).shape == (2, 3, 4, 4)
    with pytest.raises(TypeError, match="max_pool2d: stride must be an int or a tuple of 2 ints"):
        F.max_pool2d(x, 2, True)
    with pytest.raises(TypeError, match="max_pool2d: kernel_size must be an int or a tuple of 2 ints"):
        F.max_pool2d(x, (2, True), 2)
    with pytest.raises(ValueError, match="max_pool2d: stride must be >= 1"):
        F.max_pool2d(x, 2, 0)
    with pytest.raises(ShapeError, match=r"output size would be .*\(kernel \(9, 9\), stride \(1, 1\)"):
        F.max_pool2d(x, 9, 1)
    with pytest.raises(ShapeError, match=r"output size would be .*\(kernel \(9, 9\), padding \(0, 0\)"):
        F.conv2d(x, burn.zeros((4, 3, 9, 9)))
