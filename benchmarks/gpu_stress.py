"""GPU test suites under a competing GPU load: results must not change when the GPU is shared.

Starts a second process that keeps the GPU busy with large matmuls (PyTorch, else CuPy: ``--load``),
then runs the chosen test suites in ``--rounds`` sequential rounds and in one round of ``--procs``
pytest processes at once, all while the load runs. Prints one JSON document: per run the pytest counts
(from its JUnit XML) and wall time, and the load's matmul count (proof that it competed). Exits 1 when
any test failed or errored, or when the load process did no work.

    python benchmarks/gpu_stress.py                       # cuda suites, 3 rounds + 4 processes
    python benchmarks/gpu_stress.py --suites wgpu --rounds 1 --procs 0
    python benchmarks/gpu_stress.py --suites cuda,wgpu --load none   # the same runs without load

Suites: ``cuda`` (burn-cuda and burn-metrics-cuda package tests), ``cuda-conformance`` (the conformance
suite on ``--burn-backend cuda``), ``wgpu`` and ``wgpu-conformance`` likewise, ``onnx`` (burn-onnx's tests
against onnxruntime on every available device: cpu, cuda and wgpu), ``ddp`` (data-parallel
training over NCCL, on every GPU of the machine: the load shares GPU 0 with rank 0), ``all`` for every suite.
Not part of CI (there is no GPU there); run it on a GPU machine after changing a GPU backend.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

from _common import emit_json

ROOT = Path(__file__).resolve().parent.parent

SUITES: dict[str, list[str]] = {
    "cuda": ["packages/backend-cuda", "packages/metrics-cuda"],
    "cuda-conformance": ["--pyargs", "burn.testing", "--burn-backend", "cuda"],
    "wgpu": ["packages/backend-wgpu"],
    "wgpu-conformance": ["--pyargs", "burn.testing", "--burn-backend", "wgpu"],
    # burn-onnx against onnxruntime: the tests' ``device`` fixture runs each on every available backend
    "onnx": ["packages/onnx/tests"],
    # data-parallel over NCCL: one rank, and one rank per GPU (2 to 4) where a machine has several
    "ddp": [
        "packages/train/tests/test_distributed.py",
        "packages/train/tests/test_distributed_mpi.py",
        "-k",
        "nccl",
    ],
}

# The competing load: square fp32 matmuls in a loop, synchronising each time, until the parent exits
# (its stdin closes) or the stop file appears. Writes the matmul count to the count file every second.
_LOAD = r"""
import os, sys, threading, time
size, count_file, stop_file, lib = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
done = threading.Event()
threading.Thread(target=lambda: (sys.stdin.read(), done.set()), daemon=True).start()
if lib == "torch":
    import torch
    a = torch.randn(size, size, device="cuda")
    step = lambda: (a @ a, torch.cuda.synchronize())
else:
    import cupy
    a = cupy.random.standard_normal((size, size), dtype=cupy.float32)
    step = lambda: (a @ a, cupy.cuda.Device().synchronize())
n, last = 0, time.monotonic()
while not done.is_set() and not os.path.exists(stop_file):
    step()
    n += 1
    if time.monotonic() - last > 1.0:
        last = time.monotonic()
        with open(count_file, "w") as fh:
            fh.write(str(n))
with open(count_file, "w") as fh:
    fh.write(str(n))
"""


def _load_library(choice: str) -> str | None:
    if choice == "none":
        return None
    candidates = ["torch", "cupy"] if choice == "auto" else [choice]
    for lib in candidates:
        probe = (
            "import torch; assert torch.cuda.is_available()"
            if lib == "torch"
            else "import cupy; cupy.cuda.runtime.getDeviceCount()"
        )
        if subprocess.run([sys.executable, "-c", probe], capture_output=True).returncode == 0:
            return lib
    raise SystemExit(f"--load {choice}: none of {candidates} can reach a CUDA GPU here")


class Load:
    """The competing GPU process (a context manager); ``count()`` is its matmuls so far."""

    def __init__(self, lib: str | None, size: int, workdir: Path) -> None:
        self.lib, self.size = lib, size
        self.count_file, self.stop_file = workdir / "load.count", workdir / "load.stop"
        self.proc: subprocess.Popen | None = None

    def __enter__(self) -> Load:
        if self.lib:
            args = [str(self.size), str(self.count_file), str(self.stop_file), self.lib]
            self.proc = subprocess.Popen([sys.executable, "-c", _LOAD, *args], stdin=subprocess.PIPE)
            deadline = time.monotonic() + 120
            while self.count() == 0:  # wait until it really runs on the GPU
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    raise SystemExit(f"the {self.lib} load process did not start (exit {self.proc.poll()})")
                time.sleep(0.2)
        return self

    def count(self) -> int:
        try:
            return int(self.count_file.read_text() or 0)
        except (FileNotFoundError, ValueError):
            return 0

    def __exit__(self, *exc: object) -> None:
        if self.proc is not None:
            self.stop_file.touch()
            self.proc.stdin.close()
            try:
                self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.proc.kill()


def _counts(xml_path: Path) -> dict[str, int]:
    """passed/failed/errors/skipped from pytest's JUnit XML (empty counts when pytest died early)."""
    try:
        root = ET.parse(xml_path).getroot()
    except (FileNotFoundError, ET.ParseError):
        return {"passed": 0, "failed": 0, "errors": 1, "skipped": 0}
    suite = root if root.tag == "testsuite" else root.find("testsuite")
    tests, failures, errors, skipped = (
        int(suite.get(k, 0)) for k in ("tests", "failures", "errors", "skipped")
    )
    failed_names = [
        f"{case.get('classname')}::{case.get('name')}"
        for case in suite.iter("testcase")
        if case.find("failure") is not None or case.find("error") is not None
    ]
    return {
        "passed": tests - failures - errors - skipped,
        "failed": failures,
        "errors": errors,
        "skipped": skipped,
        "failed_tests": failed_names[:20],
    }


def _pytest(paths: list[str], xml_path: Path) -> subprocess.Popen:
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", f"--junitxml={xml_path}", *paths]
    return subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def _run_round(suites: list[str], procs: int, workdir: Path, label: str) -> list[dict[str, Any]]:
    """Every suite once (``procs`` == 1: one after another; else each suite in ``procs`` processes
    at once). Returns one record per pytest process."""
    records = []
    for suite in suites:
        start = time.perf_counter()
        runs = []
        for p in range(procs):
            xml = workdir / f"{label}-{suite}-{p}.xml"
            runs.append((xml, _pytest(SUITES[suite], xml)))
        for p, (xml, proc) in enumerate(runs):
            output, _ = proc.communicate()
            counts = _counts(xml)
            if counts["failed"] or counts["errors"]:
                sys.stderr.write(output[-6000:])
            records.append(
                {
                    "round": label,
                    "suite": suite,
                    "process": p,
                    "exit": proc.returncode,
                    **counts,
                    "seconds": round(time.perf_counter() - start, 1),
                }
            )
    return records


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--suites", default="cuda,cuda-conformance", help="comma list of: " + ", ".join([*SUITES, "all"])
    )
    parser.add_argument("--rounds", type=int, default=3, help="sequential rounds under load")
    parser.add_argument("--procs", type=int, default=4, help="pytest processes sharing the GPU (0: skip)")
    parser.add_argument("--load", default="auto", choices=["auto", "torch", "cupy", "none"])
    parser.add_argument("--size", type=int, default=8192, help="the load's matmul size")
    parser.add_argument("--out", help="also write the JSON here")
    args = parser.parse_args()
    suites = list(SUITES) if args.suites == "all" else args.suites.split(",")
    unknown = [s for s in suites if s not in SUITES]
    if unknown:
        parser.error(f"--suites: unknown {unknown}; expected names from {list(SUITES)} or 'all'")
    lib = _load_library(args.load)
    records: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp, Load(lib, args.size, Path(tmp)) as load:
        workdir = Path(tmp)
        for r in range(args.rounds):
            records += _run_round(suites, 1, workdir, f"round{r + 1}")
        if args.procs:
            records += _run_round(suites, args.procs, workdir, f"{args.procs}-procs")
        load_count = load.count()
    bad = sum(r["failed"] + r["errors"] for r in records)
    result = {
        "load": {"library": lib, "size": args.size, "matmuls": load_count},
        "runs": records,
        "total": {k: sum(r[k] for r in records) for k in ("passed", "failed", "errors", "skipped")},
        "ok": bad == 0 and (lib is None or load_count > 0),
    }
    emit_json(result, args.out)
    return 0 if result["ok"] else 1


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    sys.exit(main())
