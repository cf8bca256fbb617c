"""burn_wgpu.web without a browser: the exported schedule run natively through wgpu-py
(``NativeSchedule``, the same buffers, bind groups and dispatches as model.js) against burn's numpy
backend and onnxruntime; what the export refuses; buffer sharing; kernels free of constants browsers reject.
ONNX models reach the export through burn-onnx's ``export_web`` (its ``burn web export`` command is tested
in burn-onnx's test_web_cli.py). The page in a real Chromium is test_web_browser.py."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest

_HERE = Path(__file__).resolve().parent
RTOL, ATOL = 1e-4, 1e-4


@pytest.fixture(scope="module")
def web(dev: Any) -> Any:
    import burn_wgpu.web

    return burn_wgpu.web


def _export_onnx(*args: Any, **kwargs: Any) -> Any:
    """An ONNX file as a page: burn-onnx's ``export_web``, which feeds its model to ``web.export``."""
    import burn_onnx

    return burn_onnx.export_web(*args, **kwargs)


def _schedule(folder: Path) -> dict[str, Any]:
    text = (folder / "model.js").read_text()
    start = text.index("/*SCHEDULE*/") + len("/*SCHEDULE*/")
    return json.loads(text[start : text.index("/*END*/", start)])


@pytest.mark.parametrize("name", ["resnet", "mobilenet", "transformer", "recurrent", "unet", "torch_encoder"])
def test_native_schedule_matches_numpy_and_onnxruntime(web, tmp_path, name):
    import burn
    import burn_onnx
    import onnxruntime as ort
    from burn_wgpu_tests import _web_models as M

    data = M.model(name)
    path = tmp_path / "m.onnx"
    path.write_bytes(data)
    feeds = M.feeds(name, seed=2)  # other values than the export's own check
    out = _export_onnx(path, tmp_path / "page", {k: v.shape for k, v in feeds.items()})
    assert sorted(p.name for p in (tmp_path / "page").iterdir()) == ["index.html", "model.js", "weights.bin"]
    got = web.NativeSchedule(tmp_path / "page").run(feeds)
    want_ort = ort.InferenceSession(data, providers=["CPUExecutionProvider"]).run(None, feeds)
    want_np = burn_onnx.load(data, device=burn.device("cpu"))(**feeds)
    want_np = want_np if isinstance(want_np, tuple) else (want_np,)
    assert list(got) == [o.name for o in out.outputs]
    for (k, g), w_ort, w_np in zip(got.items(), want_ort, want_np):
        np.testing.assert_allclose(g, w_np.numpy(), rtol=RTOL, atol=ATOL, err_msg=f"{k} vs numpy")
        np.testing.assert_allclose(g, w_ort, rtol=RTOL, atol=ATOL, err_msg=f"{k} vs onnxruntime")
    assert out.counts["submits"] == 1 and out.counts["dispatches"] > 10
    # intermediates share buffers by liveness, kernels are compiled once each
    assert out.counts["temp_bytes"] < out.counts["temp_bytes_unshared"]
    sch = _schedule(tmp_path / "page")
    assert len({k["source"] for k in sch["kernels"]}) == len(sch["kernels"]) < out.counts["dispatches"]


def test_int64_inputs_are_declared_int64_and_stored_int32(web, tmp_path):
    from burn_wgpu_tests import _web_models as M

    path = tmp_path / "t.onnx"
    path.write_bytes(M.model("transformer"))
    out = _export_onnx(path, tmp_path / "page", {"tokens": (1, 6), "attention_mask": (1, 6)})
    assert [(i.name, i.shape, i.dtype, i.storage) for i in out.inputs] == [
        ("tokens", (1, 6), "int64", "i32"),
        ("attention_mask", (1, 6), "int64", "i32"),
    ]


def test_named_dims_default_to_one(web, tmp_path):
    from burn_wgpu_tests import _web_models as M

    path = tmp_path / "r.onnx"
    path.write_bytes(M.model("resnet"))
    out = _export_onnx(path, tmp_path / "page")
    assert out.inputs[0].shape == (1, 3, 16, 16)
    assert [o.shape for o in out.outputs] == [(1, 10), (1, 10)]


def test_module_export_names_and_values(web, tmp_path):
    import burn
    from burn import nn

    class Head(nn.Module):
        def __init__(self) -> None:
            self.lin = nn.LinearConfig(5, 3).init()

        def forward(self, t: Any) -> Any:
            y = self.lin(t)
            return y, y.argmax(1)

    head = Head()
    lin = head.lin
    x = np.random.default_rng(0).standard_normal((2, 5)).astype(np.float32)
    out = web.export(head, x, tmp_path / "page")
    assert [i.name for i in out.inputs] == ["input"]
    assert [(o.name, o.dtype) for o in out.outputs] == [("output0", "float32"), ("output1", "int32")]
    got = web.NativeSchedule(tmp_path / "page").run({"input": x})
    want = lin(burn.tensor(x)).numpy()
    np.testing.assert_allclose(got["output0"], want, rtol=RTOL, atol=ATOL)
    assert got["output1"].tolist() == want.argmax(1).tolist()


@pytest.mark.parametrize("fusion", [True, False], ids=["fused", "unfused"])
def test_narrow_int_inputs_and_outputs_keep_their_dtypes(web, tmp_path, fusion):
    """int8, uint8 and int16 inputs and outputs are declared as such, stored one value per 32-bit word,
    and the schedule wraps as burn's numpy backend does; the native run returns the declared dtypes."""
    import burn

    def forward(x: Any, q: Any) -> Any:
        return (x * 40.0).cast(burn.int8), q * q + 1, (q.cast(burn.int16) * 300).cast(burn.uint8)

    x = np.linspace(-5, 5, 12, dtype=np.float32).reshape(3, 4)
    q = np.array([[100, -128, 7, 127]] * 3, np.int8)
    out = web.export(forward, [x, q], tmp_path / "page", fusion=fusion)
    assert [(i.dtype, i.storage) for i in out.inputs] == [("float32", "f32"), ("int8", "i32")]
    assert [(o.dtype, o.storage) for o in out.outputs] == [("int8", "i32"), ("int8", "i32"), ("uint8", "u32")]
    got = web.NativeSchedule(tmp_path / "page").run({"input0": x, "input1": q})
    want = [t.numpy() for t in forward(burn.tensor(x), burn.tensor(q))]
    for name, w in zip(("output0", "output1", "output2"), want):
        assert got[name].dtype == w.dtype, name
        np.testing.assert_array_equal(got[name], w, err_msg=name)
    # a feed of wider ints is converted into the declared dtype (NumPy's wrap), as the page does
    wide = web.NativeSchedule(tmp_path / "page").run({"input0": x, "input1": q.astype(np.int32) + 256})
    np.testing.assert_array_equal(wide["output1"], want[1])


def test_a_host_read_inside_the_forward_is_refused(web, tmp_path):
    def data_dependent(x: Any) -> Any:
        n = int((x > 0).sum().item())  # a shape that depends on values
        return x[:n]

    with pytest.raises(web.WebExportError, match="data-dependent shape"):
        web.export(data_dependent, np.ones((4,), np.float32), tmp_path / "page")


def test_bad_arguments_name_what_was_expected(web, tmp_path):
    with pytest.raises(ValueError, match="example_inputs is empty"):
        web.export(lambda x: x, [], tmp_path / "p")
    with pytest.raises(ValueError, match="output_dtypes has 2 dtypes, the forward returns 1"):
        web.export(lambda x: x, np.ones((2,), np.float32), tmp_path / "p", output_dtypes=["int64", "bool"])
    from burn_wgpu_tests import _web_models as M

    path = tmp_path / "r.onnx"
    path.write_bytes(M.model("resnet"))
    with pytest.raises(ValueError, match="no input 'y'"):
        _export_onnx(path, tmp_path / "p", {"y": (1, 3, 16, 16)})
    with pytest.raises(ValueError, match="rank 4"):
        _export_onnx(path, tmp_path / "p", {"x": (3, 16, 16)})


# a NaN/Inf bit pattern in a constant bitcast: Chrome's Tint rejects it ("value nan cannot be
# represented as 'f32'"), naga accepts it; the kernels must read such bits at run time
_CONST_SPECIAL_F32 = re.compile(r"bitcast<f32>\(\s*0x(7f[89a-f]|ff[89a-f])[0-9a-f]{5}u?\s*\)", re.I)


def test_kernels_have_no_constant_nan_or_inf():
    snapshot = json.loads((_HERE / "snapshots" / "wgsl_kernels.json").read_text())
    sources = [v for v in snapshot.values() if isinstance(v, str)]
    assert len(sources) > 50 and sum("fn nan()" in s for s in sources) > 10
    assert [k for k, v in snapshot.items() if isinstance(v, str) and _CONST_SPECIAL_F32.search(v)] == []
    assert _CONST_SPECIAL_F32.search("return bitcast<f32>(0x7fc00000u);")  # the pattern would see one
    assert _CONST_SPECIAL_F32.search("bitcast<f32>(0xff800000u)")
    assert not _CONST_SPECIAL_F32.search("bitcast<f32>(0x3f800000u)")


def test_exported_kernels_have_no_constant_nan_or_inf(web, tmp_path):
    import burn

    x = burn.tensor(np.array([[1.0, 2.0, 0.25], [4.0, 0.5, 3.0]], np.float32), device="wgpu")
    web.export(lambda t: (t.log() + t.sqrt()).max(1), [x], tmp_path / "p")
    sources = [k["source"] for k in _schedule(tmp_path / "p")["kernels"]]
    assert any("fn nan()" in s for s in sources) and any("fn inf()" in s for s in sources)
    assert not any(_CONST_SPECIAL_F32.search(s) for s in sources)


def test_slot_assignment_never_aliases_live_buffers():
    from burn_wgpu.web._schedule import _assign_slots

    rng = np.random.default_rng(0)
    temps = []
    for n in range(200):
        first = int(rng.integers(0, 100))
        temps.append((n, first, first + int(rng.integers(0, 10)), int(2 ** rng.integers(8, 14))))
    slot_of, sizes = _assign_slots(temps)
    for a in temps:
        assert sizes[slot_of[a[0]]] >= a[3]
        for b in temps:
            if a[0] < b[0] and slot_of[a[0]] == slot_of[b[0]]:
                assert a[2] < b[1] or b[2] < a[1], (a, b)
    assert len(sizes) < len(temps)


# dispatches per run of the fused schedules (recorded through burn.fusion) at most: a regression bound
# with some slack over what they are now (resnet 17, mobilenet 14, transformer 35, recurrent 96, unet 30;
# unfused: 25, 26, 66, 222, 34). Since the export folds constant-only ops (a batch norm folded into its
# conv's weights) and the direct conv kernels add the bias themselves, the CNNs leave fusion little to
# merge (it was resnet 44, mobilenet 32, unet 52 fused against 67, 56, 71 unfused before).
FUSED_AT_MOST = {
    "resnet": 20,
    "mobilenet": 17,
    "transformer": 45,
    "recurrent": 100,
    "unet": 34,
    "torch_encoder": 64,
}
# models whose unfused schedule already has no element-wise chain fusion can shorten: the U-Net's max
# pools are one backend dispatch each (burn-onnx runs values-only pools as tap chains on numpy alone)
NOTHING_TO_MERGE = {"unet"}


@pytest.mark.parametrize("name", ["resnet", "mobilenet", "transformer", "recurrent", "unet", "torch_encoder"])
def test_fusion_merges_elementwise_chains_with_the_same_outputs(web, tmp_path, name):
    import onnxruntime as ort
    from burn_wgpu_tests import _web_models as M

    data = M.model(name)
    path = tmp_path / "m.onnx"
    path.write_bytes(data)
    feeds = M.feeds(name, seed=3)
    shapes = {k: v.shape for k, v in feeds.items()}
    fused = _export_onnx(path, tmp_path / "fused", shapes)
    plain = _export_onnx(path, tmp_path / "plain", shapes, fusion=False)
    assert fused.counts["dispatches"] <= FUSED_AT_MOST[name]
    if name in NOTHING_TO_MERGE:
        assert fused.counts["dispatches"] <= plain.counts["dispatches"]
    else:
        assert fused.counts["dispatches"] < plain.counts["dispatches"]
    assert fused.counts["submits"] == plain.counts["submits"] == 1
    kernels = _schedule(tmp_path / "fused")["kernels"]
    assert any(k["name"].startswith("fused_") for k in kernels)
    assert not any(k["name"].startswith("fused_") for k in _schedule(tmp_path / "plain")["kernels"])
    # the browser-portable limit: 8 storage buffers per stage, the metadata one included
    assert max(len(k["bindings"]) + 1 for k in kernels) <= 8
    got_fused = web.NativeSchedule(tmp_path / "fused").run(feeds)
    got_plain = web.NativeSchedule(tmp_path / "plain").run(feeds)
    want = ort.InferenceSession(data, providers=["CPUExecutionProvider"]).run(None, feeds)
    for (k, f), p, w in zip(got_fused.items(), got_plain.values(), want):
        np.testing.assert_allclose(f, w, rtol=RTOL, atol=ATOL, err_msg=f"{k}: fused vs onnxruntime")
        np.testing.assert_allclose(f, p, rtol=RTOL, atol=ATOL, err_msg=f"{k}: fused vs unfused")


def test_an_elementwise_chain_is_one_dispatch(web, tmp_path):
    x = np.linspace(-2, 2, 24, dtype=np.float32).reshape(4, 6)

    def chain(t: Any) -> Any:
        return ((t * 2).exp() + 1).relu() - t

    fused = web.export(chain, x, tmp_path / "fused")
    plain = web.export(chain, x, tmp_path / "plain", fusion=False)
    assert (fused.counts["dispatches"], plain.counts["dispatches"]) == (1, 5)
    assert [k["name"].startswith("fused_") for k in _schedule(tmp_path / "fused")["kernels"]] == [True]
    want = np.maximum(np.exp(x.astype(np.float64) * 2) + 1, 0) - x
    for folder in ("fused", "plain"):
        got = web.NativeSchedule(tmp_path / folder).run({"input": x})["output"]
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5, err_msg=folder)


def test_a_value_read_by_several_ops_is_written_once(web, tmp_path):
    """A recurrence as in an LSTM cell: the state feeds the next step's state and the step's output, both
    element-wise; the export writes it once per step instead of letting each kernel recompute the
    chain of earlier steps."""
    import burn

    rng = np.random.default_rng(5)
    x = rng.standard_normal((3, 4)).astype(np.float32)
    w = rng.standard_normal((4, 4)).astype(np.float32)
    steps = 8

    def recur(t: Any) -> Any:
        wt = burn.tensor(w, device=burn.ir.capture_device())
        c, total = t, None
        for _ in range(steps):
            c = (c * 0.5 + t).tanh()
            h = (c.sigmoid() * c) @ wt
            total = h if total is None else total + h
        return total

    out = web.export(recur, x, tmp_path / "page")
    sch = _schedule(tmp_path / "page")
    names = [sch["kernels"][op[1]]["name"] for op in sch["ops"] if op[0] == 0]
    # per step a state kernel and the matmul (the running sum's 8 reads need a few kernels more)
    assert out.counts["dispatches"] <= 2 * steps + 5, names
    # each element-wise op of the graph runs once: 5 per step and the 7 adds of the sum (a state not
    # written would be computed again inside the kernels of later steps: 68 ops here)
    ops = [int(m.group(1)) for n in names for m in [re.match(r"fused_(\d+)ops", n)] if m]
    assert sum(ops) == 5 * steps + steps - 1, names
    ref = x.astype(np.float64)
    c, total = ref, np.zeros((3, 4))
    for _ in range(steps):
        c = np.tanh(c * 0.5 + ref)
        total = total + (c / (1 + np.exp(-c))) @ w
    got = web.NativeSchedule(tmp_path / "page").run({"input": x})["output"]
    np.testing.assert_allclose(got, total, rtol=1e-4, atol=1e-4)


def test_constant_only_ops_are_folded_at_export(web, tmp_path):
    """A weight transform (a batch norm folded into a linear layer's weights) is computed once at
    export: the page holds only the dispatches that read the input."""
    import burn
    from burn import nn

    class Scaled(nn.Module):
        def __init__(self) -> None:
            self.lin = nn.LinearConfig(6, 4).init()
            self.var = burn.tensor(np.linspace(0.5, 2.0, 4, dtype=np.float32))

        def forward(self, t: Any) -> Any:
            scale = (self.var + 1e-5).rsqrt()  # reads parameters only: folded
            return self.lin(t) * scale.reshape((1, 4))

    m = Scaled()
    x = np.random.default_rng(5).standard_normal((3, 6)).astype(np.float32)
    out = web.export(m, x, tmp_path / "page", fusion=False)
    from burn_wgpu.web import _record

    with pytest.MonkeyPatch.context() as mp:  # the same export without folding: two more dispatches
        mp.setattr(_record, "fold_constants", lambda graph: graph)
        unfolded = web.export(m, x, tmp_path / "unfolded", fusion=False)
    assert out.counts["dispatches"] == unfolded.counts["dispatches"] - 2, (out.counts, unfolded.counts)
    got = web.NativeSchedule(tmp_path / "page").run({"input": x})["output"]
    w = m.lin.weight.val().numpy().astype(np.float64)
    b = m.lin.bias.val().numpy().astype(np.float64)
    want = (x @ w + b) / np.sqrt(np.linspace(0.5, 2.0, 4) + 1e-5)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    assert out.max_abs_diff["output"] < 1e-5


def test_pytorch_transformer_encoder_fused_export_matches_pytorch(web, tmp_path):
    """Issue 32: PyTorch's two-layer TransformerEncoder, exported fused, ran in the page and natively with
    outputs off by up to 1e3: fusion captured the second layer's repeated streams as a device graph,
    whose launches bypass the recorder, so the schedule ran a layer norm on buffers written after it.
    Fused and unfused schedules, and the model on burn-wgpu, now match PyTorch's own output."""
    import burn
    import burn_onnx
    from burn_wgpu_tests import _web_models as M

    x, want = M.torch_reference()
    path = tmp_path / "encoder.onnx"
    path.write_bytes(M.model("torch_encoder"))
    for fusion in (True, False):
        page = tmp_path / f"page-{fusion}"
        out = _export_onnx(path, page, {"x": x.shape}, fusion=fusion)
        assert out.max_abs_diff["y"] < 1e-4
        schedule = web.NativeSchedule(page)
        for _ in range(2):  # a second run reads nothing the first one left behind
            got = schedule.run({"x": x})["y"]
            np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4, err_msg=f"fusion={fusion}")
    native = burn_onnx.load(str(path), device=burn.device("wgpu"))(burn.tensor(x, device="wgpu"))
    np.testing.assert_allclose(native.numpy(), want, rtol=1e-4, atol=1e-4)


def test_export_checks_the_schedule_it_writes(web, tmp_path, monkeypatch):
    """The export's own check runs the written schedule (as the page does), not the recorded run: a
    schedule that lost a dispatch fails the export, naming the output, and nothing is written."""
    import burn_wgpu.web._export as E
    from burn import nn

    build = E.build

    def lossy(*args, **kwargs):
        schedule, blob = build(*args, **kwargs)
        last = max(i for i, op in enumerate(schedule["ops"]) if op[0] == 0)
        schedule["ops"].pop(last)
        return schedule, blob

    monkeypatch.setattr(E, "build", lossy)
    model = nn.LinearConfig(8, 4).init()
    x = np.random.default_rng(0).standard_normal((3, 8)).astype(np.float32)
    with pytest.raises(web.WebExportError, match=r"output 'output' of the exported schedule .* differs"):
        web.export(model, x, tmp_path / "page")
    assert not (tmp_path / "page").exists()


def test_recorder_refuses_what_it_cannot_trace(dev):
    """A command list replayed (or being captured) while recording would run launches the trace never
    saw; the recording executor refuses both, and the export's fusion never captures device graphs."""
    from burn.fusion import Fusion
    from burn_wgpu.web._record import WebExportError, recording_backend

    backend = recording_backend()
    with pytest.raises(WebExportError, match="replayed command list"):
        backend.ex.replay([])
    backend.ex.recording = []
    with pytest.raises(WebExportError, match="cannot be traced"):
        backend.ex.copy(None, 0, None, 0, 4)
    backend.ex.recording = None
    assert Fusion(backend, graphs=False)._capture is None
    assert Fusion(backend)._capture is not None


def test_a_schedule_reading_a_buffer_before_the_run_writes_it_is_refused(web, tmp_path, monkeypatch):
    """Issue 32's defect itself, brought back: the export's fusion captures device graphs again and the
    recorder lets their replays through untraced, so the second layer's kernels are missing where they
    ran. The export refuses the trace (a layer norm reads buffers nothing wrote before it) instead of
    writing a page that is off by 1e3, and writes nothing."""
    import burn.fusion
    import burn_wgpu.web._record as R
    from burn_wgpu._executor import Executor
    from burn_wgpu_tests import _web_models as M

    fusion = burn.fusion.Fusion

    def capturing(inner: Any, *args: Any, graphs: bool | None = None, **kwargs: Any) -> Any:
        return fusion(inner, *args, graphs=True, **kwargs)

    monkeypatch.setattr(burn.fusion, "Fusion", capturing)
    monkeypatch.setattr(R.RecordingExecutor, "_traceable", lambda self, what: None)
    monkeypatch.setattr(R.RecordingExecutor, "replay", Executor.replay)
    monkeypatch.setattr(R.RecordingExecutor, "replay_raw", Executor.replay_raw)
    x, _ = M.torch_reference()
    path = tmp_path / "encoder.onnx"
    path.write_bytes(M.model("torch_encoder"))
    with pytest.raises(web.WebExportError, match=r"out of order: dispatch \d+ \(fused_reduce_\w+\) reads"):
        _export_onnx(path, tmp_path / "page", {"x": x.shape})
    assert not (tmp_path / "page").exists()


def test_check_order_counts_read_write_bindings_and_copies_as_writes():
    """``check_order`` on hand-made traces: a buffer first bound read-only is refused (named with the
    dispatch and kernel), one written by an earlier copy or read-write binding is fine."""
    from burn_wgpu._executor import Kernel
    from burn_wgpu.web._record import BufferRecord, Copy, Dispatch, Recorded, Trace, WebExportError
    from burn_wgpu.web._schedule import check_order

    k = Kernel("add_one", "", ("read", "rw"))
    bufs = [BufferRecord(16, "input"), BufferRecord(16), BufferRecord(16), BufferRecord(16, "scratch")]
    good = [Dispatch(k, (0, 1), b"", (1, 1, 1)), Copy(1, 0, 2, 0, 16), Dispatch(k, (2, 3), b"", (1, 1, 1))]
    check_order(Recorded(Trace(bufs, good), [0], [(3, 0, 16)], []))
    bad = [Dispatch(k, (0, 1), b"", (1, 1, 1)), Dispatch(k, (2, 3), b"", (1, 1, 1))]
    with pytest.raises(WebExportError, match=r"dispatch 1 \(add_one\) reads buffer 2 \(temp, read\)"):
        check_order(Recorded(Trace(bufs, bad), [0], [(3, 0, 16)], []))
    with pytest.raises(WebExportError, match=r"copy 0 reads buffer 3 \(scratch, copy source\)"):
        check_order(Recorded(Trace(bufs, [Copy(3, 0, 2, 0, 16)]), [0], [(2, 0, 16)], []))
