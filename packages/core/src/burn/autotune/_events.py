"""The autotune/compile event bus: a tiny, numpy-free publish/subscribe channel.

Kernel tuners and JIT compilers publish progress here ("autotuning matmul 3/8"); the training
dashboard subscribes, so the screen shows activity from the first second instead of staying black
while kernels are benchmarked (tracel-ai/burn#2853). Publishing never blocks and never raises: a
subscriber that fails is reported once as a warning and the tuner carries on.

>>> from burn.autotune import AutotuneEvent, publish, subscribe
>>> seen = []
>>> unsubscribe = subscribe(seen.append)
>>> publish(AutotuneEvent("matmul", step=3, total=8))
>>> seen[0].describe()
'autotuning matmul 3/8'
>>> unsubscribe()
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field

# Past tense/verb per kind: the dashboard and the CLI log describe events with it.
_VERBS = {"autotune": "autotuning", "compile": "compiling", "cache": "loading tuned kernels for"}


@dataclass(frozen=True)
class AutotuneEvent:
    """Progress of one kernel being tuned (or compiled).

    ``kernel`` names the kernel family ("matmul"), ``step``/``total`` count candidates benchmarked so
    far, ``done`` marks the last event of that tuning run (``best`` then names the winner). ``key``
    is the tuning key (op, shape bucket, dtype), ``device`` the device string, ``kind`` one of
    ``"autotune"``, ``"compile"``, ``"cache"``. ``background``: the tuning runs between steps while the
    op runs a picked candidate (``burn.autotune.tune_pending``); ``pending`` then counts the queued tuning
    jobs (this one's included until its last event). ``waited``: on a compile's ``done`` event, the seconds
    the calling thread was held up by that compile (``compile_seconds`` adds them up).
    """

    kernel: str
    step: int = 0
    total: int = 0
    done: bool = False
    kind: str = "autotune"
    key: str = ""
    device: str = ""
    best: str | None = None
    background: bool = False
    pending: int = 0
    waited: float = 0.0
    timestamp: float = field(default_factory=time.monotonic)

    def __post_init__(self) -> None:
        if not isinstance(self.kernel, str) or not self.kernel:
            raise TypeError(f"AutotuneEvent: kernel must be a non-empty str, got {self.kernel!r}")
        if self.kind not in _VERBS:
            raise ValueError(f"AutotuneEvent: kind must be one of {sorted(_VERBS)}, got {self.kind!r}")
        if self.step < 0 or self.total < 0 or self.pending < 0 or not self.waited >= 0:
            raise ValueError(
                f"AutotuneEvent: step, total, pending and waited must be >= 0, got {self.step}/{self.total}, "
                f"{self.pending}, {self.waited}"
            )

    def describe(self) -> str:
        """One human line: ``autotuning matmul 3/8``, ``autotuning matmul done (best: tiled)``; tuning
        in the background adds ``(background, 2 pending)``."""
        text = f"{_VERBS[self.kind]} {self.kernel}"
        if self.key:
            text += f" [{self.key}]"
        if self.done:
            text += f" done (best: {self.best})" if self.best else " done"
        else:
            text += f" {self.step}/{self.total}" if self.total else ""
        if self.background:
            text += f" (background, {self.pending} pending)"
        return text


Subscriber = Callable[[AutotuneEvent], None]

# Copy-on-write tuple: publish() iterates a snapshot without any lock, so a subscriber can
# unsubscribe itself (or another thread can subscribe) while an event is being delivered.
_subscribers: tuple[Subscriber, ...] = ()
_warned: set[int] = set()


def subscribe(callback: Subscriber) -> Callable[[], None]:
    """Call ``callback(event)`` for every published event; returns a function that unsubscribes."""
    global _subscribers
    if not callable(callback):
        raise TypeError(f"subscribe(callback): expected a callable, got {type(callback).__name__}")
    _subscribers = (*_subscribers, callback)
    return lambda: unsubscribe(callback)


def unsubscribe(callback: Subscriber) -> None:
    """Stop delivering events to ``callback`` (no error if it was not subscribed)."""
    global _subscribers
    _subscribers = tuple(cb for cb in _subscribers if cb is not callback)


def subscribers() -> tuple[Subscriber, ...]:
    """The current subscribers (a snapshot)."""
    return _subscribers


_compile_waited = [0.0]


def compile_seconds() -> float:
    """Seconds this process has been held up by kernel compiles so far: the sum of ``waited`` over the
    ``done`` compile events published (a compile that ran on a worker while the caller went on counts
    only the time the caller then waited for it). The Learner reports it in its summary.

    >>> from burn.autotune import AutotuneEvent, compile_seconds, publish
    >>> before = compile_seconds()
    >>> publish(AutotuneEvent("add", kind="compile", done=True, waited=0.25))
    >>> round(compile_seconds() - before, 2)
    0.25
    """
    return _compile_waited[0]


def publish(event: AutotuneEvent) -> None:
    """Deliver ``event`` to every subscriber on the calling thread. Never raises for a subscriber."""
    if not isinstance(event, AutotuneEvent):
        raise TypeError(f"publish(event): expected an AutotuneEvent, got {type(event).__name__}")
    if event.done and event.kind == "compile":
        _compile_waited[0] += event.waited
    for callback in _subscribers:
        try:
            callback(event)
        except Exception as exc:  # a broken dashboard must never break kernel tuning
            if id(callback) not in _warned:
                _warned.add(id(callback))
                warnings.warn(
                    f"burn.autotune: subscriber {callback!r} failed on {event.describe()!r}: {exc!r}",
                    RuntimeWarning,
                    stacklevel=2,
                )
