"""The CUDA backend where it cannot run: clear reasons, a clear error on use, never a crash; plus
checks of the generated-kernel table that need no GPU."""

from __future__ import annotations

import subprocess
import sys

import burn
import burn_cuda
import pytest
from burn.backend import BINARY_OPS, UNARY_OPS
from burn_cuda import _kernels, _probe


@pytest.fixture
def probe(monkeypatch):
    """Run the probe against a patched import and forget the cached answer afterwards."""
    _probe.reset_probe()
    yield monkeypatch
    _probe.reset_probe()
    burn.plugins.reload()


def _cupy_without_gpu(error: Exception):
    class Runtime:
        @staticmethod
        def getDeviceCount():
            raise error

    class Cuda:
        runtime = Runtime

    class FakeCupy:
        cuda = Cuda

    return FakeCupy


def test_missing_cupy_reason(probe):
    def no_cupy():
        raise ImportError("No module named 'cupy'")

    probe.setattr(_probe, "_import_cupy", no_cupy)
    assert burn_cuda.is_available() == (False, _probe.INSTALL_HINT)
    assert "burn-cuda[cuda12]" in _probe.INSTALL_HINT
    assert burn_cuda.devices() == [] and burn_cuda.device_count() == 0


def test_no_driver_reason(probe):
    err = RuntimeError("cudaErrorInsufficientDriver: CUDA driver version is insufficient")
    probe.setattr(_probe, "_import_cupy", lambda: _cupy_without_gpu(err))
    ok, reason = burn_cuda.is_available()
    assert not ok
    assert reason == "no CUDA device/driver: cudaErrorInsufficientDriver: CUDA driver version is insufficient"


def test_broken_cupy_import_is_a_reason(probe):
    def broken():
        raise OSError("libcublas.so.12: cannot open shared object file")

    probe.setattr(_probe, "_import_cupy", broken)
    ok, reason = burn_cuda.is_available()
    assert not ok and reason.startswith("cupy failed to import: OSError: libcublas")


def test_using_an_unavailable_device_raises_a_clear_error(probe):
    probe.setattr(_probe, "_import_cupy", lambda: _cupy_without_gpu(RuntimeError("no driver")))
    burn.plugins.reload()
    info = {b.name: b for b in burn.backends()}["cuda"]
    assert not info.available and info.reason == "no CUDA device/driver: no driver" and info.devices == []
    with pytest.raises(burn.BackendUnavailableError, match="cuda:0"):
        burn_cuda.CudaBackend(0)


_FIRST_USE = """
import burn, burn_cuda._probe as p
def no_cupy():
    raise ImportError("No module named 'cupy'")
p._import_cupy = no_cupy
try:
    burn.zeros(2, 3, device="cuda")
except burn.BackendUnavailableError as exc:
    print("raised:", exc)
"""


def test_first_use_without_cupy_raises_a_clear_error():
    # a fresh process: no device backend cached yet, as on a machine without CUDA
    out = subprocess.run([sys.executable, "-c", _FIRST_USE], capture_output=True, text=True, check=True)
    assert out.stdout.startswith(
        "raised: device cuda:0: backend 'cuda' is unavailable: cupy is not installed"
    )


def test_registered_with_priority_and_alias():
    spec = burn.plugins.registry().backends["cuda"]
    assert spec.priority == 20 and "cupy" in spec.aliases


def test_import_does_not_load_cupy():
    # the probe (burn.backends()) may import cupy where it is installed; importing the package must not
    code = "import sys, burn_cuda, burn_cuda._plugin; print('cupy' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_matmul_precision_setting():
    assert burn_cuda.get_matmul_precision() == "fp32"
    with burn_cuda.matmul_precision("bf16"):
        assert burn_cuda.get_matmul_precision() == "bf16"
    assert burn_cuda.get_matmul_precision() == "fp32"
    burn_cuda.set_matmul_precision("tf32")
    try:
        assert burn_cuda.get_matmul_precision() == "tf32"
    finally:
        burn_cuda.set_matmul_precision("fp32")
    with pytest.raises(ValueError, match="expected one of fp32, tf32, bf16, fp16, got 'int8'"):
        burn_cuda.set_matmul_precision("int8")


_KIND_DTYPES = {
    "float": ["float16", "float32", "float64"],
    "num": ["float16", "float32", "float64", "int8", "uint8", "int16", "int32", "uint32", "int64"],
    "any": ["float32", "int64", "bool"],
    "int": ["int8", "uint8", "int32", "int64", "bool"],
}


@pytest.mark.parametrize(
    ("table", "ops", "kind"), [("unary", UNARY_OPS, "unary"), ("binary", BINARY_OPS, "binary")]
)
def test_every_contract_op_has_a_kernel_for_every_dtype_it_accepts(table, ops, kind):
    np = pytest.importorskip("numpy")
    for op, accepts in ops.items():
        for name in _KIND_DTYPES[accepts]:
            in_params, out_params, body = _kernels.kernel_source(kind, op, np.dtype(name))
            assert name in in_params and "y = (" in body, (op, name)
            bool_out = burn.backend.op_def(op).bool_result
            assert out_params == ("bool y" if bool_out else f"{name} y"), (op, name)


def test_half_computes_in_float():
    np = pytest.importorskip("numpy")
    _, _, body = _kernels.kernel_source("unary", "gelu", np.dtype("float16"))
    assert body.startswith("typedef float C;") and "(float16)(" in body
