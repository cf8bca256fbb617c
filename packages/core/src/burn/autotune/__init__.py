"""burn.autotune: kernel autotuning. For now, the event bus tuners and compilers publish progress on.

``subscribe(callback)`` / ``publish(event)`` carry ``AutotuneEvent``s; the training dashboard shows them.
Importing this package loads neither numpy nor threads.
"""

from ._events import AutotuneEvent, publish, subscribe, subscribers, unsubscribe

__all__ = ["AutotuneEvent", "publish", "subscribe", "subscribers", "unsubscribe"]
