"""The ONNX backend conformance suite: the node test cases the installed ``onnx`` package generates
(``onnx.backend.test.case.node``; onnx >= 1.23 builds them in memory), run through ``burn_onnx.load`` on
one device and judged as onnx's own backend test runner judges them (``Runner.assert_similar_outputs``):
the number of outputs, each output's shape and dtype exactly, the values with
``np.testing.assert_allclose(rtol=1e-3, atol=1e-7)`` (bfloat16 within two ulps, strings equal,
sequences item by item).

Each case ends in one of four statuses: ``pass``; ``unsupported`` (burn-onnx refused the model cleanly,
with an ``UnsupportedOnnxError`` at load time or a ``NotImplementedError`` while running; another engine
raised ``NotImplementedError``: the reason is kept); ``wrong`` (it ran, the outputs differ: the first difference is kept) and ``crash`` (any other
exception: its type and message are kept).
"""

from __future__ import annotations

import warnings
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

STATUSES = ("pass", "unsupported", "wrong", "crash")
_DETAIL_CHARS = 300


@dataclass(frozen=True)
class CaseResult:
    """How one conformance case ended: ``status`` is one of ``pass``, ``unsupported``, ``wrong``,
    ``crash``; ``detail`` says why (empty for a pass).

    >>> import burn_onnx
    >>> burn_onnx.conformance("cpu", names=["test_equal_string"])["test_equal_string"].status
    'unsupported'
    """

    name: str
    status: str
    detail: str = ""


_CASES: list[Any] | None = None


def suite_cases() -> list[Any]:
    """The installed onnx's node test cases (``onnx.backend.test.case.TestCase``), built once per
    process (about 12 s: onnx runs its reference implementation for every case)."""
    global _CASES
    if _CASES is None:
        from onnx.backend.test.case.node import collect_testcases

        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            _CASES = sorted(collect_testcases(), key=lambda c: c.name)
    return _CASES


def _array(value: Any) -> Any:
    """A case's input or output as numpy data (TensorProtos decoded; lists and None kept)."""
    import onnx

    if isinstance(value, onnx.TensorProto):
        return onnx.numpy_helper.to_array(value)
    if isinstance(value, list):
        return [_array(v) for v in value]
    return value


def _one_line(text: str) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= _DETAIL_CHARS else text[: _DETAIL_CHARS - 3] + "..."


def compare(outputs: Sequence[Any], expected: Sequence[Any], rtol: float, atol: float) -> str | None:
    """Why ``outputs`` fail onnx's runner's comparison with ``expected`` (None when they pass)."""
    if len(outputs) != len(expected):
        return f"{len(outputs)} output(s), expected {len(expected)}"
    for i, (got, want) in enumerate(zip(outputs, expected)):
        if isinstance(want, (list, tuple)) or isinstance(got, (list, tuple)):
            if not isinstance(got, (list, tuple)) or not isinstance(want, (list, tuple)):
                return f"output {i}: {type(got).__name__}, expected {type(want).__name__}"
            problem = compare(list(got), list(want), rtol, atol)
            if problem:
                return f"output {i} (sequence): {problem}"
            continue
        if want is None or got is None:
            if want is not got:
                return f"output {i}: {got!r}, expected {want!r}"
            continue
        got, want = np.asarray(got), np.asarray(want)
        if got.shape != want.shape:
            return f"output {i}: shape {got.shape}, expected {want.shape}"
        if want.dtype == object:
            if not np.array_equal(got, want):
                return f"output {i}: strings differ"
            continue
        if got.dtype != want.dtype:
            return f"output {i}: dtype {got.dtype}, expected {want.dtype}"
        tol = rtol
        if want.dtype.name == "bfloat16":
            tol = max(rtol, 2.0**-6)
            got, want = got.astype(np.float32), want.astype(np.float32)
        try:
            np.testing.assert_allclose(got, want, rtol=tol, atol=atol)
        except AssertionError as exc:
            lines = [ln.strip() for ln in str(exc).splitlines() if ln.strip()]
            mismatch = next((ln for ln in lines if ln.startswith("Mismatched")), "values differ")
            return f"output {i}: {mismatch}"
        except TypeError as exc:  # dtypes numpy cannot compare (float8 from ml_dtypes)
            if not np.array_equal(got.astype(np.float32), want.astype(np.float32), equal_nan=True):
                return f"output {i}: values differ ({exc})"
    return None


def _unsupported_reason(exc: BaseException) -> str:
    nodes = getattr(exc, "nodes", None)
    if nodes:
        return "; ".join(sorted({f"{n.op_type}: {n.reason}" for n in nodes}))
    return str(exc)


Engine = Callable[[Any, list[Any]], list[Any]]  # (onnx.ModelProto, inputs) -> outputs


def burn_engine(device: Any) -> Engine:
    """burn-onnx as an engine: ``load`` on ``device``, then ``OnnxModel.run`` (outputs as numpy arrays
    in their declared types)."""
    from ._model import load

    def run(model: Any, inputs: list[Any]) -> list[Any]:
        return list(load(model, device=device).run(*inputs))

    return run


def run_case(case: Any, engine: Engine) -> CaseResult:
    """Run one conformance case with ``engine`` and judge it. ``UnsupportedOnnxError``, or a
    ``NotImplementedError`` anywhere in the exception's chain, is ``unsupported``."""
    from ._errors import UnsupportedOnnxError

    inputs, expected = case.data_sets[0]
    inputs = [_array(v) for v in inputs]
    expected = [_array(v) for v in expected]
    try:
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")  # narrowing warnings on backends without a dtype
            outs = engine(case.model, inputs)
    except UnsupportedOnnxError as exc:
        return CaseResult(case.name, "unsupported", _one_line(_unsupported_reason(exc)))
    except Exception as exc:
        cause: BaseException | None = exc
        while cause is not None and not isinstance(cause, NotImplementedError):
            cause = cause.__cause__
        if cause is not None:
            return CaseResult(case.name, "unsupported", _one_line(str(cause)))
        return CaseResult(case.name, "crash", _one_line(f"{type(exc).__name__}: {exc}"))
    problem = compare(outs, expected, case.rtol, case.atol)
    if problem:
        return CaseResult(case.name, "wrong", _one_line(problem))
    return CaseResult(case.name, "pass")


def run_suite(
    device: Any = "cpu", *, names: Iterable[str] | None = None, engine: Engine | None = None
) -> dict[str, CaseResult]:
    """Run the suite (or the cases in ``names``) through burn-onnx on ``device``, or through another
    ``engine``; case name -> result."""
    import burn

    if engine is None:
        engine = burn_engine(burn.device(device) if isinstance(device, str) else device)
    wanted = None if names is None else set(names)
    results: dict[str, CaseResult] = {}
    for case in suite_cases():
        if wanted is None or case.name in wanted:
            results[case.name] = run_case(case, engine)
    return results


def counts(results: dict[str, CaseResult]) -> dict[str, int]:
    """Status -> number of cases, every status present."""
    found = Counter(r.status for r in results.values())
    return {s: found.get(s, 0) for s in STATUSES}


def conformance(
    device: Any = "cpu", *, names: Iterable[str] | None = None, engine: Engine | None = None
) -> dict[str, CaseResult]:
    """Run the ONNX backend conformance suite (the node test cases of the installed ``onnx``) on
    ``device`` through ``burn_onnx.load``, judged as onnx's runner judges: case name -> ``CaseResult``
    (``status`` pass / unsupported / wrong / crash and a one-line ``detail``). ``names`` limits the run
    to those cases. ``engine``, a callable ``(onnx.ModelProto, input arrays) -> output arrays`` that
    raises ``NotImplementedError`` for what it cannot run, judges another runtime (onnxruntime) by the
    same rules instead. ``burn onnx conformance --device wgpu`` prints the counts.

    >>> import burn_onnx
    >>> results = burn_onnx.conformance("cpu", names=["test_abs", "test_add"])
    >>> sorted((name, r.status) for name, r in results.items())
    [('test_abs', 'pass'), ('test_add', 'pass')]
    """
    return run_suite(device, names=names, engine=engine)
