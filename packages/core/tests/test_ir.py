"""burn.ir: the op vocabulary, capture without computing, replay, and the versioned byte form."""

from __future__ import annotations

import inspect
import struct

import burn
import numpy as np
import pytest
from burn import ir, nn
from burn.backend import ARG_REDUCE_OPS, BINARY_OPS, REDUCE_OPS, UNARY_OPS, Backend

CPU = burn.device("cpu")


class Net(nn.Module):
    """conv + batch norm + pool + linear + embedding: module ops, weights and an int input."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2dConfig((1, 4), (3, 3)).init(CPU)
        self.bn = nn.BatchNormConfig(4).init(CPU)
        self.pool = nn.MaxPool2dConfig((2, 2), stride=(2, 2)).init()
        self.fc = nn.LinearConfig(4 * 3 * 3, 10).init(CPU)
        self.emb = nn.EmbeddingConfig(10, 3).init(CPU)

    def forward(self, x, tok):
        y = self.pool(self.bn(self.conv(x)).relu()).flatten(1, 3)
        return nn.functional.log_softmax(self.fc(y), 1), self.emb(tok).sum(1)


def _inputs():
    rng = np.random.default_rng(0)
    x = burn.tensor(rng.random((2, 1, 8, 8), dtype=np.float32))
    tok = burn.tensor(rng.integers(0, 10, (2, 5)))
    return x, tok


def test_every_backend_op_has_a_kind():
    """Every public op method of the contract, and every name of the shared op tables, is in OPS."""
    methods = {d.method for d in ir.OPS.values()}
    not_ops = {
        "from_numpy",
        "to_numpy",
        "read_many",
        "shape_of",
        "dtype_of",
        "sync",
        "missing_core",
        "counters",
        "fusion_runtime",
        "call_state",
        "call_state_scope",
        "memory_stats",  # device services of burn.memory_stats / empty_cache, not ops
        "reset_peak_memory",
        "empty_cache",
    }
    public = {
        name
        for name, fn in inspect.getmembers(Backend, inspect.isfunction)
        if not name.startswith("_") and name not in not_ops
    }
    assert public - methods == set(), f"Backend methods without an OpDef: {sorted(public - methods)}"
    for table in (UNARY_OPS, BINARY_OPS, REDUCE_OPS, ARG_REDUCE_OPS):
        for name in table:
            assert ir.op_def(name).kind == name
    assert ir.OpKind.EXP == "exp" and ir.op_def("exp").method == "unary"
    assert ir.op_def("isnan").result == "bool" and ir.op_def("lt").result == "bool"
    with pytest.raises(KeyError, match="unknown op kind 'nope'"):
        ir.op_def("nope")


def test_capture_computes_nothing_and_records_each_op():
    calls = []

    def fn(x):
        calls.append(type(x._p).__name__)
        return (x * 2).relu().sum(1)

    g = ir.capture(fn, {"x": ((2, 3), "float32")})
    assert calls == ["Sym"]
    assert [str(op.kind) for op in g.ops] == ["mul", "relu", "sum"]
    assert g.outputs[0].shape == (2,) and g.outputs[0].dtype is burn.float32
    assert "sum(" in str(g)


def test_module_capture_replays_equal_to_running_it():
    net = Net()
    g = ir.capture(net, {"x": ((2, 1, 8, 8), "float32"), "tok": ((2, 5), "int64")})
    hist = g.op_histogram()
    assert hist["conv"] == 1 and hist["max_pool"] == 1 and hist["matmul"] == 1 and hist["select"] == 1
    assert len(g.constants) == len(net.params()) + 2  # + batch norm's running mean and variance
    x, tok = _inputs()
    got = ir.replay(g, [x, tok])
    want = net.valid()(x, tok)
    for a, b in zip(got, want, strict=True):
        np.testing.assert_array_equal(a.numpy(), b.numpy())


def test_bytes_round_trip():
    net = Net()
    g = ir.capture(net, {"x": ((2, 1, 8, 8), "float32"), "tok": ((2, 5), "int64")})
    data = g.to_bytes()
    assert data[:6] == b"BURNIR"
    back = ir.Graph.from_bytes(data)
    assert back.op_histogram() == g.op_histogram()
    assert [(o.kind, o.args, o.outputs) for o in back.ops] == [(o.kind, o.args, o.outputs) for o in g.ops]
    for cid, arr in g.constants.items():
        np.testing.assert_array_equal(back.constants[cid], arr)
        assert back.constants[cid].dtype == arr.dtype
    x, tok = _inputs()
    for a, b in zip(ir.replay(back, {"x": x, "tok": tok}), net.valid()(x, tok), strict=True):
        np.testing.assert_array_equal(a.numpy(), b.numpy())


def test_non_finite_arguments_survive_bytes():
    g = ir.capture(lambda x: x.clamp(min=float("-inf"), max=1.0) + float("inf"), {"x": ((2,), "float32")})
    back = ir.Graph.from_bytes(g.to_bytes())
    got = ir.replay(back, [burn.tensor([0.5, 3.0])]).tolist()
    assert got == [float("inf"), float("inf")]


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda d: d[:5], "too short"),
        (lambda d: b"NOTIR!" + d[6:], "bad magic"),
        (lambda d: d[:6] + struct.pack("<H", 99) + d[8:], "format version 99"),
        (lambda d: d[:-3], "runs past the end"),
        (lambda d: d[:20], "truncated header"),
        (lambda d: d.replace(b'"relu"', b'"nope"'), "unknown op kind 'nope'"),
        (lambda d: d.replace(b'"ops":', b'"opz":'), "malformed graph header: KeyError"),
        (lambda d: d.replace(b'"float32"', b'"float99"'), "malformed graph header"),
    ],
)
def test_malformed_bytes_are_clear_errors(mutate, message):
    g = ir.capture(lambda x: (x * burn.tensor([1.0, 2.0], device=x.device)).relu(), {"x": ((2,), "float32")})
    with pytest.raises(ir.IrError, match=message):
        ir.Graph.from_bytes(mutate(g.to_bytes()))


def test_dangling_reference_is_an_error():
    g = ir.capture(lambda x: x.exp(), {"x": ((2,), "float32")})
    g.ops.insert(0, ir.OpRecord(ir.OpKind.NEG, (ir.Ref(42),), (ir.TensorRef(43, (2,), burn.float32),)))
    with pytest.raises(ir.IrError, match="tensor 42 is used before it is defined"):
        g.check()


def test_reading_a_value_during_capture_is_a_clear_error():
    with pytest.raises(ir.IrError, match=r"cannot read tensors \(.item\(\)"):
        ir.capture(lambda x: x * x.sum().item(), {"x": ((2,), "float32")})
    g = ir.capture(lambda x: x + 1, {"x": ((2,), "float32")})  # the failed capture left nothing behind
    assert [str(o.kind) for o in g.ops] == ["add"]


def test_capture_mirrors_the_target_backend_dtypes(monkeypatch):
    like = burn.device("cpu")
    g = ir.capture(lambda x: x.argmax(0), {"x": ((3, 2), "float32")}, like=like)
    assert g.outputs[0].dtype is like.backend.default_int
    assert ir.capture(lambda x: x * 2, {"x": ((2,), "bfloat16")}, like=like).outputs[0].dtype is burn.bfloat16
    monkeypatch.setattr(like.backend, "dtypes", like.backend.dtypes - {burn.bfloat16})  # no ml_dtypes
    with pytest.raises(burn.DTypeError, match="bfloat16"):
        ir.capture(lambda x: x, {"x": ((2,), "bfloat16")}, like=like)


def test_replay_checks_inputs_and_recorded_types():
    g = ir.capture(lambda x: x * 2, {"x": ((2,), "float32")})
    with pytest.raises(ir.IrError, match=r"input 'x' is float32\[3\], the graph expects float32\[2\]"):
        ir.replay(g, [burn.tensor([1.0, 2.0, 3.0])])
    with pytest.raises(ir.IrError, match=r"takes inputs \['x'\]"):
        ir.replay(g, {"y": burn.tensor([1.0, 2.0])})


def test_replay_on_an_autodiff_device_gives_gradients():
    g = ir.capture(lambda x: (x * x).sum(), {"x": ((3,), "float32")})
    ad = burn.device("cpu", autodiff=True)
    x = burn.tensor([1.0, -2.0, 3.0], device=ad).require_grad()
    loss = ir.replay(g, [x])
    grads = loss.backward()
    np.testing.assert_allclose(x.grad(grads).numpy(), [2.0, -4.0, 6.0])


def test_docstring_examples_run():
    import doctest

    from burn.ir import _capture, _replay

    for module in (ir, _capture, _replay):
        result = doctest.testmod(module, extraglobs={"burn": burn})
        assert result.attempted > 0 and result.failed == 0, module.__name__


def test_rows_hold_the_dtype_rules():
    """The frontend's casts come from the rows: float ops widen ints, arithmetic widens bools."""
    f32, i64, i32 = burn.float32, burn.int64, burn.int32
    assert ir.op_def("exp").operand_dtype(i64, f32, i64) is f32
    assert ir.op_def("add").operand_dtype(burn.bool_, f32, i32) is i32
    assert ir.op_def("maximum").operand_dtype(burn.bool_, f32, i64) is burn.bool_
    assert ir.op_def("sum").operand_dtype(burn.bool_, f32, i64) is i64
    assert ir.op_def("any").operand_dtype(f32, f32, i64) is burn.bool_
    assert ir.op_def("mean").operand_dtype(burn.int8, f32, i64) is f32
    assert ir.op_def("lt").result_dtype(f32) is burn.bool_
    with pytest.raises(burn.DTypeError, match=r"neg: expected a numeric tensor, got bool"):
        ir.op_def("neg").operand_dtype(burn.bool_, f32, i64)
    with pytest.raises(burn.DTypeError, match=r"and: expected bool or integer tensors, got float32"):
        ir.op_def("and").operand_dtype(f32, f32, i64)
    assert ir.op_def("exp").as_is == {burn.float16, burn.float32, burn.float64, burn.bfloat16}
    # the frontend applies them
    assert burn.tensor([1, 2]).exp().dtype is f32
    assert (burn.tensor([True, False]) + burn.tensor([True, True])).dtype is i64
