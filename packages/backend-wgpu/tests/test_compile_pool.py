"""Pipelines created on the compile pool: from worker threads (wgpu-py allows device calls there), once
per WGSL source, encoded in the order of their dispatches, compile errors raised on the caller, and the
caller's waiting counted in ``burn.autotune.compile_seconds``."""

from __future__ import annotations

import struct
import threading

import pytest
from burn import autotune

_SRC = """
@group(0) @binding(0) var<storage, read> info: array<u32>;
@group(0) @binding(1) var<storage, read_write> out: array<u32>;
@compute @workgroup_size(1)
fn main() {{ out[info[0]] = out[info[0]] * {mul}u + info[1]; }}
"""


def _kernel(mul: int, tag: str = "") -> object:
    from burn_wgpu._executor import Kernel

    # the tag makes the source new to this process (other tests may have compiled the plain one)
    return Kernel(f"test_pool_{mul}", _SRC.format(mul=mul) + f"// {tag}\n", ("rw",))


def _run(ex, dispatches, slots: int = 4) -> list[int]:
    """Dispatch ``(kernel, slot, add)`` in order on a zeroed buffer and read it back."""
    out = ex.pool.storage(4 * slots)
    ex.write(out.buffer, bytes(4 * slots))
    for kernel, slot, add in dispatches:
        ex.dispatch(kernel, [out.buffer], struct.pack("<2I", slot, add), (1, 1, 1))
    return list(struct.unpack(f"<{slots}I", ex.read([(out.buffer, 0, 4 * slots)])[0]))


def test_pipelines_created_on_worker_threads_run_correctly(backend):
    from burn_wgpu._compiler import Compiler

    compiler = Compiler(backend.ex.device, "wgpu-test", threads=4)
    layout = backend.ex._layout(("rw",))
    kernels = [_kernel(m, "threads") for m in range(2, 10)]
    names: list[str] = []
    original = compiler._create

    def create(kernel, layout):
        names.append(threading.current_thread().name)
        return original(kernel, layout)

    compiler._create = create  # type: ignore[method-assign]
    for k in kernels:
        compiler.start(k, layout)
    pipelines = [compiler.get(k, layout) for k in kernels]
    compiler.close()
    assert all(name.startswith("burn-wgpu-compile") for name in names) and len(names) == 8
    # each pipeline from a worker runs its own kernel: out = out * mul + add, twice over
    ex = backend.ex
    for k, (pipeline, _) in zip(kernels, pipelines):
        ex.compiler._done[k.source] = (pipeline, layout)
        mul = int(k.name.rsplit("_", 1)[1])
        assert _run(ex, [(k, 1, 3), (k, 1, 5)]) == [0, 3 * mul + 5, 0, 0]


def test_dispatches_keep_their_order_while_pipelines_compile(backend):
    ex = backend.ex
    ex.flush()
    new_a, new_b = _kernel(3, "order-a"), _kernel(7, "order-b")
    known = _kernel(2, "order-known")
    _run(ex, [(known, 0, 0)])  # compiled and encoded: a pipeline that is ready
    assert ex.compiler.ready(known.source) is not None
    # new, known, new, known on one slot: the known ones must wait behind the new ones' compiles
    got = _run(ex, [(new_a, 0, 1), (known, 0, 1), (new_b, 0, 1), (known, 0, 1)])
    assert got[0] == ((1 * 2 + 1) * 7 + 1) * 2 + 1
    assert not ex._deferred


def test_a_copy_after_a_compiling_dispatch_sees_its_result(backend):
    ex = backend.ex
    ex.flush()
    kernel = _kernel(5, "copy")
    src, dst = ex.pool.storage(16), ex.pool.storage(16)
    ex.write(src.buffer, struct.pack("<4I", 1, 1, 1, 1))
    ex.dispatch(kernel, [src.buffer], struct.pack("<2I", 2, 4), (1, 1, 1))
    ex.copy(src.buffer, 0, dst.buffer, 0, 16)  # encodes the kept dispatch before the copy
    assert struct.unpack("<4I", ex.read([(dst.buffer, 0, 16)])[0]) == (1, 1, 9, 1)


def test_one_pipeline_per_source_however_often_it_is_asked_for(backend):
    ex = backend.ex
    ex.flush()
    kernel = _kernel(4, "once")
    twin = type(kernel)("another_name", kernel.source, kernel.bindings)  # same WGSL text
    compiled, misses = ex.compiler.compiled, ex.stats["pipeline_misses"]
    got = _run(ex, [(kernel, 0, 1), (twin, 0, 1), (kernel, 0, 1)])
    assert got[0] == (1 * 4 + 1) * 4 + 1
    assert ex.compiler.compiled - compiled == 1
    assert ex.stats["pipeline_misses"] - misses == 1


def test_a_compile_error_raises_on_the_caller_and_ends_its_event(backend):
    from burn_wgpu._executor import Kernel

    ex = backend.ex
    ex.flush()
    seen: list[autotune.AutotuneEvent] = []
    unsubscribe = autotune.subscribe(seen.append)
    bad = Kernel("test_pool_broken", _SRC.format(mul="not_a_number"), ("rw",))
    try:
        with pytest.raises(Exception, match="not_a_number|unknown|error"):
            ex.pipeline(bad)
    finally:
        unsubscribe()
    kinds = [(e.kernel, e.kind, e.done) for e in seen]
    assert ("test_pool_broken", "compile", False) in kinds
    assert ("test_pool_broken", "compile", True) in kinds


def test_the_callers_wait_counts_as_compile_seconds(backend):
    ex = backend.ex
    ex.flush()
    before, waited = autotune.compile_seconds(), ex.compiler.waited_s
    _run(ex, [(_kernel(6, "seconds"), 0, 1)])
    assert ex.compiler.waited_s > waited
    assert autotune.compile_seconds() - before == pytest.approx(ex.compiler.waited_s - waited)


def test_compile_threads_setting(monkeypatch):
    from burn_wgpu._compiler import compile_threads

    monkeypatch.setenv("BURN_WGPU_COMPILE_THREADS", "0")
    assert compile_threads() == 0
    monkeypatch.setenv("BURN_WGPU_COMPILE_THREADS", "3")
    assert compile_threads() == 3
    monkeypatch.setenv("BURN_WGPU_COMPILE_THREADS", "many")
    with pytest.raises(ValueError, match="BURN_WGPU_COMPILE_THREADS"):
        compile_threads()
    monkeypatch.delenv("BURN_WGPU_COMPILE_THREADS")
    assert 1 <= compile_threads() <= 4


def test_inline_compiles_without_threads(backend):
    from burn_wgpu._compiler import Compiler

    compiler = Compiler(backend.ex.device, "wgpu-test", threads=0)
    layout = backend.ex._layout(("rw",))
    kernel = _kernel(8, "inline")
    compiler.start(kernel, layout)  # created at once on this thread
    assert compiler.ready(kernel.source) is not None and compiler._pool is None
    assert compiler.get(kernel, layout) is compiler.ready(kernel.source)


def test_a_kernel_that_fails_to_compile_in_a_batch_leaves_the_executor_whole(backend):
    from burn_wgpu._executor import Kernel

    ex = backend.ex
    ex.flush()
    good = _kernel(3, "whole")
    bad = Kernel("test_pool_broken_batch", _SRC.format(mul="nope") + "// batch\n", ("rw",))
    out = ex.pool.storage(16)
    ex.write(out.buffer, bytes(16))
    for kernel in (good, bad, good):  # the broken one is recorded between two that compile
        ex.dispatch(kernel, [out.buffer], struct.pack("<2I", 0, 1), (1, 1, 1))
    with pytest.raises(Exception, match="nope|unknown|error"):
        ex.flush()
    assert not ex._deferred
    assert struct.unpack("<4I", ex.read([(out.buffer, 0, 16)])[0])[0] == 1 * 3 + 1  # the good ones ran
    assert _run(ex, [(good, 1, 2)]) == [0, 2, 0, 0]  # and the executor goes on
