"""burn.autotune's event bus: numpy-free publish/subscribe that never lets a subscriber break a tuner."""

from __future__ import annotations

import burn.autotune as autotune
import pytest
from burn.autotune import AutotuneEvent


def test_subscribe_publish_unsubscribe():
    seen = []
    unsubscribe = autotune.subscribe(seen.append)
    try:
        autotune.publish(AutotuneEvent("matmul", 3, 8))
        autotune.publish(AutotuneEvent("reduce", 8, 8, done=True, best="tree"))
    finally:
        unsubscribe()
    autotune.publish(AutotuneEvent("matmul", 4, 8))  # after unsubscribing: not delivered
    assert [e.describe() for e in seen] == ["autotuning matmul 3/8", "autotuning reduce done (best: tree)"]
    assert seen[0] not in autotune.subscribers()


def test_a_failing_subscriber_warns_once_and_others_still_receive():
    seen = []

    def broken(event):
        raise RuntimeError("dashboard bug")

    unsub_broken, unsub_ok = autotune.subscribe(broken), autotune.subscribe(seen.append)
    try:
        with pytest.warns(RuntimeWarning, match="dashboard bug"):
            autotune.publish(AutotuneEvent("conv2d", 1, 2, kind="compile"))
        autotune.publish(AutotuneEvent("conv2d", 2, 2, kind="compile"))  # no second warning
    finally:
        unsub_broken()
        unsub_ok()
    assert [e.describe() for e in seen] == ["compiling conv2d 1/2", "compiling conv2d 2/2"]


def test_bad_events_are_rejected_with_clear_errors():
    with pytest.raises(TypeError, match="kernel must be a non-empty str"):
        AutotuneEvent("")
    with pytest.raises(ValueError, match="kind must be one of"):
        AutotuneEvent("matmul", kind="guess")
    with pytest.raises(TypeError, match="expected an AutotuneEvent"):
        autotune.publish("matmul 3/8")
    with pytest.raises(TypeError, match="expected a callable"):
        autotune.subscribe(42)
