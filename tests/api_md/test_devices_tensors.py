"""API.md, Devices, backends, tensors: backends(), devices, creation, attributes, dtypes."""

from __future__ import annotations

import burn
import numpy as np
import pytest
from burn_api_md._helpers import ADEV, CPU, close


def test_backends_report_name_availability_reason_devices_version():
    infos = burn.backends()
    assert isinstance(infos, list) and infos
    for info in infos:
        assert isinstance(info, burn.BackendInfo)
        assert isinstance(info.name, str) and isinstance(info.available, bool)
        assert isinstance(info.reason, str) and isinstance(info.devices, list)
        assert isinstance(info.version, str)
        # a distribution's version; a plugin registered from code (tests' core-only backend) has none
        assert info.version or info.dist == "(registered in code)", info
        assert info.available or info.reason, f"{info.name} is unavailable without a reason"
    numpy_backend = {i.name: i for i in infos}["ndarray"]
    assert numpy_backend.available and "cpu" in numpy_backend.devices


def test_cpu_auto_autodiff_devices_and_seed():
    cpu = burn.device("cpu")
    assert cpu == CPU and str(cpu) == "cpu" and not cpu.autodiff
    x = burn.tensor([[1.0, 2.0], [3.0, 4.0]], device=cpu)
    assert x.device == cpu and x.dtype is burn.float32

    auto = burn.device("auto")  # the best available backend
    assert auto.kind in {i.name for i in burn.backends() if i.available}
    assert burn.ones((2,), device=auto).tolist() == [1.0, 1.0]

    adev = burn.device("cpu", autodiff=True)
    assert adev.autodiff and adev.inner == cpu and adev == ADEV

    burn.seed(0)
    first = burn.rand((5,)).tolist()
    burn.seed(0)
    assert burn.rand((5,)).tolist() == first


@pytest.mark.parametrize("name", ["wgpu", "cuda"])
def test_gpu_devices_run_or_say_why(name):
    info = {i.name: i for i in burn.backends()}.get(name)
    if info is None:  # the plugin distribution is not installed: the name is unknown
        with pytest.raises(burn.DeviceError, match=name):
            burn.device(name)
        return
    dev = burn.device(name)
    if not info.available:  # e.g. cuda here: no CuPy / no driver
        for spec in (name, f"{name}:0"):
            with pytest.raises(burn.BackendUnavailableError) as exc:
                burn.zeros((2,), device=burn.device(spec))
            assert name in str(exc.value) and info.reason in str(exc.value)
        with pytest.raises(burn.BackendUnavailableError, match="unavailable"):
            burn.tensor([1.0], device=burn.device(name, autodiff=True))
        return

    x = burn.tensor([[1.0, 2.0], [3.0, 4.0]], device=dev)
    assert x.device == dev
    close(x @ x, [[7.0, 10.0], [15.0, 22.0]])
    assert x.to(CPU).device == CPU and x.to(CPU).tolist() == x.tolist()
    # from_numpy: the dtype follows the array where the backend supports it, else its default of the kind
    f64 = burn.from_numpy(np.array([0.5, 1.5]), device=dev)
    assert f64.dtype is (burn.float64 if burn.float64 in dev.backend.dtypes else dev.backend.default_float)
    unsupported = [d for d in (burn.float64, burn.int64, burn.int8) if d not in dev.backend.dtypes]
    for dt in unsupported:  # asking for a dtype the backend lacks is a clear error
        with pytest.raises(burn.DTypeError, match=dt.name):
            burn.zeros((2,), dtype=dt, device=dev)

    adev = burn.device(name, autodiff=True)
    w = burn.tensor([1.0, -2.0], device=adev).require_grad()
    grads = (w * w).sum().backward()
    close(w.grad(grads), [2.0, -4.0])

    for spec in info.devices:  # "wgpu:0", "wgpu:1", ...: each listed device runs
        d = burn.device(spec)
        assert d.kind == name and d.index == int(spec.split(":")[1])
        assert burn.ones((3,), device=d).sum().item() == 3.0


# fmt: off
CREATION = [
    ("tensor", lambda: burn.tensor([[1.0, 2.0], [3.0, 4.0]], device=CPU), [[1, 2], [3, 4]], "float32"),
    ("tensor-ints", lambda: burn.tensor([1, 2, 3]), [1, 2, 3], "int64"),
    ("tensor-bools", lambda: burn.tensor([True, False]), [True, False], "bool"),
    ("zeros", lambda: burn.zeros((2, 3)), np.zeros((2, 3)), "float32"),
    ("zeros-ints", lambda: burn.zeros(2, 3), np.zeros((2, 3)), "float32"),
    ("zeros-keywords", lambda: burn.zeros(shape=(2, 3), dtype=burn.int32, device=CPU), np.zeros((2, 3)), "int32"),
    ("ones", lambda: burn.ones((3,), dtype=None, device=None), np.ones(3), "float32"),
    ("ones-keywords", lambda: burn.ones(shape=(1, 2), dtype=burn.float64, device=CPU), [[1, 1]], "float64"),
    ("full", lambda: burn.full((2, 2), 7.5), np.full((2, 2), 7.5), "float32"),
    ("full-int", lambda: burn.full(shape=(3,), value=4), [4, 4, 4], "int64"),
    ("arange", lambda: burn.arange(1, 7, 2), [1, 3, 5], "int64"),
    ("arange-stop", lambda: burn.arange(4), [0, 1, 2, 3], "int64"),
    ("arange-floats", lambda: burn.arange(start=0.0, stop=1.0, step=0.25), [0, 0.25, 0.5, 0.75], "float32"),
    ("linspace", lambda: burn.linspace(0.0, 1.0, 5), np.linspace(0.0, 1.0, 5), "float32"),
    ("eye", lambda: burn.eye(3), np.eye(3), "float32"),
    ("eye-keywords", lambda: burn.eye(n=2, dtype=burn.int32), np.eye(2), "int32"),
    ("zeros_like", lambda: burn.zeros_like(burn.tensor([[1, 2]], dtype=burn.int32)), [[0, 0]], "int32"),
    ("ones_like", lambda: burn.ones_like(burn.tensor([1.5, 2.5])), [1, 1], "float32"),
]
# fmt: on


@pytest.mark.parametrize("make, want, dtype", [c[1:] for c in CREATION], ids=[c[0] for c in CREATION])
def test_creation_functions(make, want, dtype):
    t = make()
    assert isinstance(t, burn.Tensor) and t.dtype is getattr(burn, dtype) and t.device == CPU
    close(t, want)


def test_random_creation_and_from_numpy():
    burn.seed(3)
    u = burn.rand((2000,))
    assert u.shape == (2000,) and u.dtype is burn.float32
    assert 0.0 <= u.min().item() and u.max().item() < 1.0 and abs(u.mean().item() - 0.5) < 0.03
    n = burn.randn((4000,)).numpy()
    assert n.dtype == np.float32 and abs(n.mean()) < 0.06 and abs(n.std() - 1.0) < 0.05
    r = burn.randint(2, 5, (500,))
    assert r.dtype is burn.int64 and set(r.tolist()) == {2, 3, 4}
    assert burn.randint(low=0, high=2, shape=(3, 2)).shape == (3, 2)
    assert burn.rand(shape=(2, 3)).shape == burn.randn(shape=(2, 3)).shape == (2, 3)

    arr = np.arange(6, dtype=np.float64).reshape(2, 3)
    x = burn.from_numpy(arr, device=ADEV)
    arr[0, 0] = 100.0  # a copy: later changes to the array do not reach the tensor
    assert x.device == ADEV and x.dtype is burn.float64 and x[0, 0].item() == 0.0
    for np_dtype, dtype in ((np.int32, burn.int32), (np.uint8, burn.uint8), (np.bool_, burn.bool)):
        assert burn.from_numpy(np.zeros(2, dtype=np_dtype)).dtype is dtype


def test_tensor_attributes_and_conversions():
    data = [[1.5, -2.75, 3.0], [4.0, 5.0, 6.25]]
    t = burn.tensor(data, device=CPU)
    assert t.shape == (2, 3) and isinstance(t.shape, tuple)
    assert t.ndim == 2 and t.dtype is burn.float32 and t.device == CPU and len(t) == 2
    arr = t.numpy()
    assert isinstance(arr, np.ndarray) and arr.dtype == np.float32
    np.testing.assert_array_equal(arr, np.array(data, np.float32))
    assert t.tolist() == data
    assert t[1, 2].item() == 6.25 and isinstance(t[1, 2].item(), float)
    with pytest.raises(ValueError, match="one element"):
        t.item()
    np.testing.assert_array_equal(np.asarray(t), arr)

    moved = t.to(ADEV)
    assert moved.device == ADEV and moved.tolist() == data
    assert moved.to(CPU).device == CPU and t.to("cpu").device == CPU
    truncated = t.cast(burn.int32)  # float -> int truncates toward zero
    assert truncated.dtype is burn.int32 and truncated.tolist() == [[1, -2, 3], [4, 5, 6]]
    assert t.to(burn.float64).dtype is burn.float64 and t.to(burn.float64).tolist() == data
    assert t.cast("float16").dtype is burn.float16


DTYPE_NAMES = ["float16", "bfloat16", "float32", "float64", "int8", "uint8", "int32", "int64", "bool"]


@pytest.mark.parametrize("name", DTYPE_NAMES)
def test_dtype_names_and_backend_support(name):
    dt = getattr(burn, name)
    assert isinstance(dt, burn.DType) and dt.name == name and burn.dtype(name) is dt
    if dt in CPU.backend.dtypes:  # the backend states which dtypes it supports
        t = burn.ones((2,), dtype=dt, device=CPU)
        assert t.dtype is dt and t.cast(burn.float32).tolist() == [1.0, 1.0]
    else:
        with pytest.raises(burn.DTypeError, match=f"{name}.*supported"):
            burn.ones((2,), dtype=dt, device=CPU)
