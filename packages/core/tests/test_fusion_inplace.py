"""In-place writes of replayed fusion programs: a kernel may write its outputs into an input that no
later step reads (``FusionRuntime.execute_reusing``). The rule is checked by a runtime that really
writes into every donor it is offered (numpy ``copyto`` into the donor's memory): if fusion offered a
value something still reads (a later kernel, a view a call made of it, a tensor), the results would
change. They equal the unfused results, and donors are offered where the rule allows. And what no
step reads goes early: planning drops each unread call result as soon as it is made."""

from __future__ import annotations

import burn
import numpy as np
import pytest
from burn.fusion import ReferenceRuntime
from burn.testing._training import small_training


class WritesInPlace(ReferenceRuntime):
    """Runs each plan op by op, then stores every output whose dtype and shape fit into a donor."""

    def __init__(self, backend):
        super().__init__(backend)
        self.offered: list[tuple[int, ...]] = []
        self.written = 0

    def execute_reusing(self, plan, inputs, scalars, donors):
        self.offered.append(donors)
        outs = self.execute(plan, inputs, scalars)
        free = list(donors)
        for j, out in enumerate(outs):
            k = next(
                (
                    i
                    for i in free  # a 0-d numpy result is an immutable scalar: nothing to write into
                    if isinstance(inputs[i], np.ndarray)
                    and inputs[i].shape == out.shape
                    and inputs[i].dtype == out.dtype
                ),
                None,
            )
            if k is not None:
                free.remove(k)
                np.copyto(inputs[k], out)
                outs[j] = inputs[k]
                self.written += 1
        return outs


@pytest.fixture
def inplace(monkeypatch):
    """An autodiff device over a fusion device whose runtime writes into the donors it is offered."""
    dev = burn.device("cpu", fusion=True, autodiff=True)
    fb = dev.backend.inner
    runtime = WritesInPlace(fb.inner)
    monkeypatch.setattr(fb, "runtime", runtime)
    for name in ("_programs", "_lengths", "_plans"):
        monkeypatch.setattr(fb, name, type(getattr(fb, name))())
    return dev, fb, runtime


def test_training_replays_write_dead_values_in_place_and_equal_unfused(inplace):
    dev, fb, runtime = inplace
    before = fb.stats["in_place"]
    got, model = small_training(dev)
    want, ref_model = small_training(burn.device("cpu", autodiff=True))
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    for (name, p), (_, q) in zip(model.record().items(), ref_model.record().items()):
        np.testing.assert_allclose(p, q, rtol=1e-5, atol=1e-6, err_msg=name)
    assert fb.stats["replays"] >= 4
    assert runtime.written > 0 and fb.stats["in_place"] - before == runtime.written


def test_a_value_a_call_viewed_is_never_written_over(inplace):
    """``a`` is read by a reshape (a call: its result is a view of ``a``'s buffer) and by a later
    kernel; the view is read after that kernel. Writing the kernel's output into ``a`` would change
    the view, so ``a`` is never offered."""
    dev, fb, runtime = inplace
    x = np.arange(12, dtype=np.float32).reshape(3, 4) / 10

    def step(t):
        a = (t * 2).exp()
        v = a.reshape(4, 3)  # a call reads a: a is written by a kernel, v is a view of it
        b = a + 1  # a kernel, a's last reader (no tensor holds a after this function)
        return b, v * 3  # the view is read by a kernel run after b's

    got = []
    for _ in range(4):  # planned, then replayed
        b, c = step(burn.tensor(x, device=dev))
        got.append((b.numpy(), c.numpy()))
    want_a = np.exp(x * 2)
    for b, c in got:
        np.testing.assert_allclose(b, want_a + 1, rtol=1e-6)
        np.testing.assert_allclose(c, want_a.reshape(4, 3) * 3, rtol=1e-6)
    assert fb.stats["replays"] >= 2


def test_planning_drops_each_unread_call_result_at_once(monkeypatch):
    """A stream of calls whose results nothing reads and no tensor holds (a timing loop's ``a @ b``)
    keeps at most one of them alive while it is planned, not all until the stream ends; their
    values are never needed, and the results a tensor holds still arrive."""
    import weakref

    dev = burn.device("cpu", fusion=True)
    fb = dev.backend
    for name in ("_programs", "_lengths", "_plans"):
        monkeypatch.setattr(fb, name, type(getattr(fb, name))())
    alive: list[weakref.ref] = []
    most = [0]
    matmul = fb._calls["matmul"]

    def counting(*args):
        out = matmul(*args)
        most[0] = max(most[0], sum(r() is not None for r in alive) + 1)
        alive.append(weakref.ref(out))
        return out

    monkeypatch.setitem(fb._calls, "matmul", counting)
    rng = np.random.default_rng(0)
    a = burn.tensor(rng.standard_normal((16, 16)).astype(np.float32), device=dev)
    b = burn.tensor(rng.standard_normal((16, 16)).astype(np.float32), device=dev)
    plans = fb.stats["plans"]
    for _ in range(40):
        a @ b  # its result dropped: only its time would be wanted
    kept = a @ b
    fb.sync()
    assert fb.stats["plans"] == plans + 1 and len(alive) == 41  # one planned stream; every call ran
    assert most[0] <= 2
    np.testing.assert_allclose(kept.numpy(), a.numpy() @ b.numpy(), rtol=1e-5)
