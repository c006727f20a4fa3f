"""A typed pull the in-process core holds for a transport: the context of its PullReady."""
from __future__ import annotations

import itertools

__all__ = ["HeldCall", "next_typed_id"]

_ids = itertools.count(1 << 40)         # apart from commands' opaques
next_typed_id = _ids.__next__


class HeldCall:
    """Who to answer (``callback``), the pull (``request``) and the reply timer that
    answers with a timeout after ``timeout_ms`` if the core never does (a broker stopped
    meanwhile, a fault rule's drop), as a network client's would."""

    __slots__ = ("opaque", "callback", "timer", "request", "suspend_ms", "timeout_ms", "fault")

    def __init__(self, opaque: int, callback, request, suspend_ms: int, timeout_ms: int) -> None:
        self.opaque = opaque
        self.callback = callback
        self.timer = None
        self.request = request
        self.suspend_ms = suspend_ms
        self.timeout_ms = timeout_ms
        self.fault = None                   # a fault outcome that acts on the answer (a delay, a duplicate)
