"""``benchmarks/bench_web_train.py`` (issue 37's comparison with TensorFlow.js), on burn's side only:
CI has no npm, so TF.js never runs here. Its arguments parse as documented, a missing TF.js install is
a one-line error that says how to install it (before any browser starts), and ``--engines burn`` runs a
few steps of the exported MLP trainer in headless Chromium and prints the documented JSON, its GPU
work counted in the page agreeing with the exported schedule's own counts; ``--native`` (no browser)
replays the exported MLP trainer natively beside burn-wgpu's own step and prints its JSON, both engines
starting from the same weights (the same first loss). No timing is asserted."""

from __future__ import annotations

import importlib.util
import json
import math
import sys
from pathlib import Path
from typing import Any

import pytest
from burn_wgpu_tests import _browser  # registered by this folder's conftest

SCRIPT = Path(__file__).resolve().parents[3] / "benchmarks" / "bench_web_train.py"


@pytest.fixture(scope="module")
def bench() -> Any:
    spec = importlib.util.spec_from_file_location("bench_web_train_under_test", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    # the script imports its folder's helpers (_common, _web_browser), as when run from there
    with pytest.MonkeyPatch.context() as mp:
        mp.syspath_prepend(str(SCRIPT.parent))
        spec.loader.exec_module(module)
    return module


def test_arguments(bench: Any, monkeypatch: Any, tmp_path: Path) -> None:
    monkeypatch.setenv("BURN_TFJS_DIR", str(tmp_path))
    args = bench.parse_args([])
    assert args.models == ["mlp", "cnn"] and args.engines == ["burn", "tfjs"]
    assert (args.read, args.tfjs, args.tfjs_backend, args.native) == ("both", tmp_path, "auto", False)
    assert bench.parse_args(["--native"]).native
    args = bench.parse_args(["--engines", "burn", "--models", "cnn", "--read", "off", "--tfjs", "/x"])
    assert (args.engines, args.models, args.read, args.tfjs) == (["burn"], ["cnn"], "off", Path("/x"))
    for bad in (["--engines", "torch"], ["--models", "resnet"], ["--steps", "0"], ["--read", "sometimes"]):
        with pytest.raises(SystemExit):
            bench.parse_args(bad)


def test_missing_tfjs_says_how_to_install(bench: Any, tmp_path: Path, capsys: Any) -> None:
    assert bench.main(["--engines", "burn,tfjs", "--tfjs", str(tmp_path)]) == 2
    error = json.loads(capsys.readouterr().out)["error"]
    assert error.startswith(f"TF.js not found under {tmp_path}/node_modules")
    assert "--npm-install" in error and "--engines burn" in error


@pytest.mark.skipif(_browser.unavailable() is not None, reason=_browser.unavailable() or "")
def test_burn_engine_json(bench: Any, tmp_path: Path, capsys: Any) -> None:
    pytest.importorskip("wgpu")
    out = tmp_path / "out.json"
    argv = ["--engines", "burn", "--models", "mlp", "--steps", "2", "--warmup", "0"]
    argv += ["--block", "2", "--blocks", "1", "--batch-size", "8", "--json", str(out)]
    assert bench.main(argv) == 0
    doc = json.loads(out.read_text())
    assert json.loads(capsys.readouterr().out) == doc
    assert doc["benchmark"] == "bench_web_train" and doc["engines"] == ["burn"]
    assert doc["tfjs_version"] is None and doc["same_initial_weights"] is False
    (row,) = doc["models"]
    assert row["model"] == "mlp" and row["batch_size"] == 8
    assert "tfjs" not in row and "ratio_burn_over_tfjs" not in row and "page_errors" not in row
    fig = row["burn"]
    assert fig["params"] == 64 * 128 + 128 + 128 * 10 + 10
    # one compute pass and one submission per step, the schedule's dispatches, counted in the page
    step = {
        "passes": 1,
        "dispatches": row["burn_export"]["schedule_counts"]["step"]["dispatches"],
        "submits": 1,
    }
    assert fig["first_step_counts"] == fig["read"]["per_step"] == fig["pipelined"]["per_step"] == step
    for key in ("load_ms", "first_step_ms", "load_plus_first_step_ms"):
        assert fig[key] > 0
    assert 0 < fig["read"]["min_ms"] <= fig["read"]["median_ms"]
    assert fig["pipelined"]["ms_per_step"] > 0 and fig["pipelined"]["block"] == 2
    assert all(math.isfinite(fig[k]) and fig[k] > 0 for k in ("loss_first", "loss_last"))


def test_native_json(bench: Any, tmp_path: Path, capsys: Any) -> None:
    pytest.importorskip("wgpu")
    out = tmp_path / "out.json"
    argv = ["--native", "--models", "mlp", "--steps", "2", "--warmup", "0", "--block", "2", "--blocks", "1"]
    assert bench.main([*argv, "--batch-size", "8", "--json", str(out)]) == 0
    doc = json.loads(out.read_text())
    assert json.loads(capsys.readouterr().out) == doc
    assert doc["benchmark"] == "bench_web_train" and doc["mode"] == "native"
    (row,) = doc["models"]
    assert row["model"] == "mlp" and row["burn_export"]["schedule_counts"]["step"]["submits"] == 1
    for engine in ("native", "burn_wgpu"):
        fig = row[engine]
        assert 0 < fig["read"]["min_ms"] <= fig["read"]["median_ms"] and fig["pipelined"]["ms_per_step"] > 0
        assert math.isfinite(fig["loss_last"]) and fig["first_step_ms"] > 0
    # the same initial weights and batch: the page's schedule and burn-wgpu agree on the first loss
    assert row["native"]["loss_first"] == pytest.approx(row["burn_wgpu"]["loss_first"], rel=1e-4)
    assert row["native"]["adapter"]
    assert set(row["ratio_native_over_burn_wgpu"]) == {"read_median", "pipelined"}
    if "skipped" in row["torch_cuda"]:  # no CUDA here: said why, no ratio
        assert "ratio_native_over_torch_cuda" not in row
    else:
        assert row["ratio_native_over_torch_cuda"]["read_median"] > 0
