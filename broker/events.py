"""The event record: every state transition of a message, in order.

Kinds: ``stored`` (accepted into a topic), ``delayed`` (diverted to a delay level),
``redelivered`` (re-stored into its real topic when due), ``sent_back`` (CONSUMER_SEND_MSG_BACK
chose a level), ``dead_lettered`` (stored into %DLQ%<group>), ``offset_committed``.
Tests, the simulator and the analytics read it; subscribers (the MQTT event feed) get
each event as it happens. The log is in memory, ~0.5 KiB an event: ``capacity`` makes
it a ring of the newest events, ``enabled = False`` keeps none (what ``serve`` does:
nothing there reads the record, and its consumers subscribe to the kinds they need).
"""
from __future__ import annotations

from collections import deque
from dataclasses import asdict, dataclass
from typing import Callable, Iterable, Iterator

__all__ = ["Event", "EventLog", "EventKind", "ALL_KINDS"]


class EventKind:
    STORED = "stored"
    DELAYED = "delayed"
    REDELIVERED = "redelivered"
    SENT_BACK = "sent_back"
    DEAD_LETTERED = "dead_lettered"
    OFFSET_COMMITTED = "offset_committed"
    FAULT = "fault"                     # a fault rule was applied (broker/faults/rules.py)


@dataclass(slots=True, unsafe_hash=True)
class Event:
    """One transition; a value nobody changes (not frozen only because a frozen one costs
    a call per field to build, and one is built per offset commit a subscriber takes)."""

    kind: str
    time_ms: int
    topic: str
    queue_id: int = -1
    queue_offset: int = -1
    commit_log_offset: int = -1
    msg_id: str | None = None            # UNIQ_KEY (the client's msgId) when present
    group: str | None = None
    reconsume_times: int = 0
    delay_level: int = 0
    due_ms: int | None = None
    origin_msg_id: str | None = None
    real_topic: str | None = None        # delayed: where it will go; sent_back: business topic

    def to_json(self) -> dict:
        return {k: v for k, v in asdict(self).items() if v is not None}


ALL_KINDS = frozenset({EventKind.STORED, EventKind.DELAYED, EventKind.REDELIVERED, EventKind.SENT_BACK,
                       EventKind.DEAD_LETTERED, EventKind.OFFSET_COMMITTED, EventKind.FAULT})


class EventLog:
    """``enabled`` keeps events in memory (``BrokerConfig.record_events``); subscribers
    get the kinds they asked for either way. ``wanted`` is every kind someone takes:
    the core builds an event only for those, as it runs on every put."""

    def __init__(self, capacity: int | None = None) -> None:
        self._events: deque[Event] = deque(maxlen=_checked_capacity(capacity))
        self._subscribers: list[tuple[Callable[[Event], None], frozenset[str]]] = []
        self._enabled = True
        self.wanted: frozenset[str] = ALL_KINDS

    @property
    def capacity(self) -> int | None:
        """How many events are kept, the newest (None: all)."""
        return self._events.maxlen

    @capacity.setter
    def capacity(self, n: int | None) -> None:
        self._events = deque(self._events, maxlen=_checked_capacity(n))

    @property
    def enabled(self) -> bool:
        return self._enabled

    @enabled.setter
    def enabled(self, on: bool) -> None:
        self._enabled = bool(on)
        self._update_wanted()

    def _update_wanted(self) -> None:
        kinds = set(ALL_KINDS) if self._enabled else set()
        for _, k in self._subscribers:
            kinds |= k
        self.wanted = frozenset(kinds)

    def append(self, event: Event) -> None:
        if self._enabled:
            self._events.append(event)
        for fn, kinds in self._subscribers:
            if event.kind in kinds:
                fn(event)

    def subscribe(self, fn: Callable[[Event], None], kinds: Iterable[str] | None = None) -> Callable[[], None]:
        """Call ``fn(event)`` for each new event (of ``kinds`` only, when given);
        returns an unsubscribe function."""
        wanted = ALL_KINDS if kinds is None else frozenset(kinds)
        unknown = wanted - ALL_KINDS
        if unknown:
            raise ValueError(f"unknown event kinds: {sorted(unknown)}; known: {sorted(ALL_KINDS)}")
        entry = (fn, wanted)
        self._subscribers.append(entry)
        self._update_wanted()

        def unsubscribe() -> None:
            self._subscribers.remove(entry)
            self._update_wanted()

        return unsubscribe

    def of_kind(self, *kinds: str) -> list[Event]:
        return [e for e in self._events if e.kind in kinds]

    def for_message(self, msg_id: str) -> list[Event]:
        return [e for e in self._events if e.msg_id == msg_id or e.origin_msg_id == msg_id]

    def clear(self) -> None:
        self._events.clear()

    def __iter__(self) -> Iterator[Event]:
        return iter(self._events)

    def __len__(self) -> int:
        return len(self._events)

    def __getitem__(self, i: int) -> Event:
        return self._events[i]


def _checked_capacity(n):
    if n is not None and (isinstance(n, bool) or not isinstance(n, int) or n < 0):
        raise ValueError(f"event log capacity must be None or an int >= 0, got {n!r}")
    return n
