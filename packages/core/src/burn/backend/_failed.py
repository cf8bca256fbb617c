"""``Failed``: a slot that holds an error instead of a value."""

from __future__ import annotations


class Failed:
    """What a deferred or remote runtime keeps in place of a value whose op failed: no data, only the
    error, so ops reading it fail the same way without running and a read reports the error. burn's
    fusion decorator keeps one for a lazy node whose stream raised; burn-remote's server keeps one in
    its tensor table for an op that failed.

    >>> slot = burn.backend.Failed(ValueError("shape mismatch"))
    >>> type(slot.error).__name__, str(slot.error)
    ('ValueError', 'shape mismatch')
    """

    __slots__ = ("error",)

    def __init__(self, error: BaseException) -> None:
        self.error = error
