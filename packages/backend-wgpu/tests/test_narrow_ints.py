"""int8, uint8 and int16 on wgpu: real dtypes stored one element per 32-bit word and wrapped into their
range on every store. Each case runs on the unfused and on the fused wgpu device and must equal the
numpy backend on the same inputs exactly (integer math), dtype included."""

from __future__ import annotations

import types

import burn
import numpy as np
import pytest
from burn.nn import functional as F

NARROW = (burn.int8, burn.uint8, burn.int16)
SHAPE = (6, 8)  # 48 elements: dense kernels take the vec4 path, the strided cases the indexed one


def _inputs(dt: burn.DType) -> dict[str, np.ndarray]:
    """Arrays of the whole range of ``dt`` (extremes included), and the other operands the cases use."""
    rng = np.random.default_rng(dt.itemsize * 10 + (dt.kind == "u"))
    info = np.iinfo(dt.name)
    x = rng.integers(info.min, info.max, SHAPE, endpoint=True).astype(dt.name)
    y = rng.integers(info.min, info.max, SHAPE, endpoint=True).astype(dt.name)
    x.flat[:4] = [info.min, info.max, 0, info.max]
    y.flat[:4] = [info.min, 1, 0, info.max]  # min + min, max + 1, max + max overflow
    return {
        "x": x,
        "y": y,
        "f": rng.uniform(-3 * (info.max + 1), 3 * (info.max + 1), SHAPE).astype(np.float32),
        "i": rng.integers(-(2**31), 2**31 - 1, SHAPE).astype(np.int32),
        "m": rng.random(SHAPE) < 0.5,
        "idx": rng.integers(0, SHAPE[1], (6, 5)).astype(np.int32),
        "row": rng.integers(0, SHAPE[0], (6, 8)).astype(np.int32),
    }


CASES = {
    "roundtrip": lambda t: t.x,
    "add": lambda t: t.x + t.y,
    "sub": lambda t: t.x - t.y,
    "mul": lambda t: t.x * t.y,
    "add_scalar": lambda t: t.x + 7,
    "mul_scalar": lambda t: t.x * 3,
    "strided_add": lambda t: t.x[:, ::2] + t.y.T[1::2, :6].T,
    "neg": lambda t: -t.x,
    "abs": lambda t: t.x.abs(),
    "floor_div_rem": lambda t: (t.x // 3, t.x % 5),
    "maximum_clamp": lambda t: (t.x.maximum(t.y), t.x.minimum(t.y), t.x.clamp(-5, 100)),
    "to_float32": lambda t: t.x.cast(burn.float32),
    "to_int32": lambda t: t.x.cast(burn.int32),
    "to_bool": lambda t: t.x.cast(burn.bool),
    "from_float32": lambda t: t.f.cast(t.dt),
    "from_int32": lambda t: t.i.cast(t.dt),
    "from_bool": lambda t: t.m.cast(t.dt),
    "from_other_narrow": lambda t: tuple(t.x.cast(d) for d in NARROW),
    "compare": lambda t: (t.x == t.y, t.x < t.y, t.x >= 3, t.x != t.x.flip(0)),
    "sum": lambda t: (t.x.sum(), t.x.sum(1), t.x.sum(0, keepdim=True)),
    "prod": lambda t: t.x.prod(1),
    "max_min": lambda t: (t.x.max(), t.x.max(1), t.x.min(0)),
    "argmax": lambda t: (t.x.argmax(1), t.x.argmin(0)),
    "cumsum": lambda t: (t.x.cumsum(1), t.x.cumprod(0)),
    "gather": lambda t: t.x.gather(1, t.idx),
    "select": lambda t: t.x.select(0, [2, 0, 5, 2]),
    "cat": lambda t: (burn.cat([t.x, t.y], 0), burn.cat([t.x, t.y[:, :3]], 1)),
    "where": lambda t: burn.where(t.m, t.x, t.y),
    "mask_fill": lambda t: t.x.mask_fill(t.m, 5),
    "scatter_add": lambda t: t.x.scatter_add(0, t.row, t.y),
    "matmul": lambda t: t.x @ t.y.T,
    "narrow_index": lambda t: (t.f.gather(1, t.idx.cast(t.dt)), t.f.select(0, t.idx[0].cast(t.dt) % 6)),
    "max_pool": lambda t: F.max_pool2d(t.x.reshape(1, 2, 3, 8), 2, stride=1, return_indices=True),
    "sort": lambda t: t.x.sort(1),
    "promote": lambda t: tuple(t.x + t.y.cast(d) for d in NARROW),
}


def _on_wgpu(dtype: np.dtype) -> np.dtype:
    """The dtype wgpu gives where the numpy backend gives ``dtype``: int64 (indices) is int32 there."""
    return np.dtype(np.int32) if dtype == np.int64 else dtype


def _run(case, dt: burn.DType, device) -> list[np.ndarray]:
    arrays = _inputs(dt)
    t = types.SimpleNamespace(dt=dt, **{k: burn.tensor(v, device=device) for k, v in arrays.items()})
    out = CASES[case](t)
    outs = out if isinstance(out, tuple) else (out,)
    flat = [v for o in outs for v in (o if isinstance(o, tuple) else (o,))]
    return [o.numpy() for o in flat]


@pytest.mark.parametrize("fused", [False, True], ids=["unfused", "fused"])
@pytest.mark.parametrize("dt", NARROW, ids=lambda d: d.name)
@pytest.mark.parametrize("case", sorted(CASES))
def test_narrow_int_ops_equal_numpy(case, dt, fused, dev, raw_dev):
    device = dev if fused else raw_dev
    assert dt in device.backend.dtypes
    want = _run(case, dt, "cpu")
    got = _run(case, dt, device)
    for g, w in zip(got, want, strict=True):
        assert g.dtype == _on_wgpu(w.dtype), f"{case}: {g.dtype} != {w.dtype}"
        np.testing.assert_array_equal(g, w, err_msg=case)


@pytest.mark.parametrize("dt", NARROW, ids=lambda d: d.name)
def test_creation_and_uploads_keep_the_dtype(dt, dev):
    info = np.iinfo(dt.name)
    for device in (dev, "cpu"):
        made = [
            burn.zeros(3, dtype=dt, device=device),
            burn.ones((2, 2), dtype=dt, device=device),
            burn.full((3,), info.max, dtype=dt, device=device),
            burn.arange(0, 9, 2, dtype=dt, device=device),
            # wider data given the narrow dtype: numpy's conversion (wraps)
            burn.tensor(np.array([info.max + 1, -1, 2**20 + 3], np.int32), dtype=dt, device=device),
        ]
        got = [m.numpy() for m in made]
        if device == "cpu":
            want = got
        else:
            assert [m.dtype for m in made] == [dt] * 5
    for g, w in zip(got, want):
        assert g.dtype == np.dtype(dt.name)
        np.testing.assert_array_equal(g, w)


def test_casts_from_float_follow_the_documented_rule(raw_dev, dev):
    """Truncate toward zero and wrap a value within int32's range; NaN, infinities and values outside
    int32's range give 0 (NumPy's astype on x86-64)."""
    f = np.array([300.7, -1.5, -129.7, np.nan, np.inf, -np.inf, 3e9, -3e9, 70000.2, 127.9], np.float32)
    want = {
        burn.int8: [44, -1, 127, 0, 0, 0, 0, 0, 112, 127],
        burn.uint8: [44, 255, 127, 0, 0, 0, 0, 0, 112, 127],
        burn.int16: [300, -1, -129, 0, 0, 0, 0, 0, 4464, 127],
    }
    for device in (raw_dev, dev):
        x = burn.tensor(f, device=device)
        for dt, values in want.items():
            got = x.cast(dt).numpy()
            assert got.dtype == np.dtype(dt.name)
            assert got.tolist() == values, (device, dt)
            fused_chain = ((x * 2.0) / 2.0).cast(dt).numpy()  # the cast inside a fused kernel
            assert fused_chain.tolist() == values, (device, dt)


@pytest.mark.parametrize("dt", NARROW, ids=lambda d: d.name)
def test_fused_chains_wrap_every_intermediate(dt, dev, raw_dev):
    """A chain of narrow int ops runs as one fused kernel whose intermediates wrap as the unfused ops
    store them: ``(x + y) > 0`` compares the wrapped sum, and a widening cast reads the wrapped value."""
    a = _inputs(dt)
    chains = {
        "compare_wrapped": lambda x, y: ((x + y) > 0, (x * 3 - y) <= 7),
        "widen_after_wrap": lambda x, y: ((x + y).cast(burn.int32), (x * x + 1).cast(burn.float32)),
        "long": lambda x, y: ((x + y) * 3 - x).abs() + burn.where(x > y, x, y) * 2,
    }
    for name, chain in chains.items():
        want = [o.numpy() for o in chain(burn.tensor(a["x"]), burn.tensor(a["y"]))]
        for device in (raw_dev, dev):
            with burn.profile(device) as p:
                outs = chain(burn.tensor(a["x"], device=device), burn.tensor(a["y"], device=device))
                got = [o.numpy() for o in outs]
            for g, w in zip(got, want, strict=True):
                assert g.dtype == _on_wgpu(w.dtype)
                np.testing.assert_array_equal(g, w, err_msg=f"{name} on {device}")
            if device is dev:
                assert p.fused >= 1, f"{name}: nothing fused on {dt.name}"


QUANT_SCHEMES = {
    "per_tensor_symmetric": dict(),
    "per_tensor_affine": dict(mode="affine"),
    "per_channel_symmetric": dict(granularity="per_channel", axis=1),
    "per_channel_affine": dict(mode="affine", granularity="per_channel", axis=0),
}


@pytest.mark.parametrize("scheme", sorted(QUANT_SCHEMES))
def test_quantized_values_are_int8_as_on_cpu(scheme, dev, raw_dev):
    """``int_repr()`` is int8 with the cpu's integers; dequantize and the int8 product
    (``quantized_matmul`` behind a quantized Linear's forward) agree with the cpu."""
    from burn.quantization import QuantScheme, quantized_linear

    s = QuantScheme(**QUANT_SCHEMES[scheme])
    rng = np.random.default_rng(3)
    x = rng.standard_normal((16, 24)).astype(np.float32)
    a = rng.standard_normal((5, 16)).astype(np.float32)
    ref = burn.tensor(x).quantize_dynamic(s)
    for device in (raw_dev, dev):
        q = burn.tensor(x, device=device).quantize_dynamic(s)
        values = q.int_repr()
        assert values.dtype is burn.int8
        got = values.numpy()
        assert got.dtype == np.int8
        np.testing.assert_array_equal(got, ref.int_repr().numpy())
        np.testing.assert_allclose(q.dequantize().numpy(), ref.dequantize().numpy(), rtol=1e-6, atol=1e-7)
        if s.granularity == "per_tensor" or s.axis == 1:  # a Linear weight (K, N): per tensor or per column
            y = quantized_linear(burn.tensor(a, device=device), q).numpy()
            want = quantized_linear(burn.tensor(a), ref).numpy()
            np.testing.assert_allclose(y, want, rtol=1e-5, atol=1e-5)


def test_replayed_and_recorded_programs_wrap(dev, monkeypatch):
    """A repeated int8 stream replays as a program and then as a recorded command list; each run,
    with a new scalar each time, equals the numpy backend."""
    from burn.testing._training import fresh_programs

    fb = dev.backend
    fresh_programs(fb, monkeypatch)
    a = _inputs(burn.int8)
    x, y = (burn.tensor(a[k], device=dev) for k in ("x", "y"))
    cx, cy = burn.tensor(a["x"]), burn.tensor(a["y"])
    before = fb.stats["graph_launches"]
    for k in range(8):
        got = ((x * (k + 2) + y) * 3).cast(burn.int32).sum(1).numpy()
        want = ((cx * (k + 2) + cy) * 3).cast(burn.int32).sum(1).numpy()
        np.testing.assert_array_equal(got, want.astype(np.int32), err_msg=f"run {k}")
    assert fb.stats["graph_launches"] > before, fb.runtime.capture_failures
