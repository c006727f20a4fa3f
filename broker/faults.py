"""Faults on demand: rules that make the broker misbehave the way production does, the
same for every dialect (issue 38).

Theory of operation. A rule is *where* (an operation, and optional matchers: topic,
group or subscription, client id, dialect, broker), *what* (an action) and *how often*
(the next N matches, a probability drawn from the broker's seeded random source, or a
window of the broker's clock). Each front asks ``FaultSet.match`` at its one call into
the core's typed operation; the first rule that matches and fires is applied by the
front in its dialect's terms:

* REFUSE — the dialect's own error (a 4.x response code, a 5.x status, a Pulsar
  ServerError: a default per operation, or the rule's ``error``);
* DROP — no answer at all (the client times out); for a send, ``stored`` says whether
  the message was stored first: the "stored but the acknowledgement was lost" case that
  makes a producer's retry a duplicate;
* DELAY — the answer comes ``delay_ms`` later on the broker's clock (virtual in tests);
* DUPLICATE — a delivery is handed over twice (the store keeps one record);
* HOLD — deliveries to the matched group stop while the rule is active.

Every applied fault is an event (EventKind.FAULT) and counts on its rule, so a user sees
why a message came back. With no rule installed a front's check is one attribute test.
Randomness comes only from the injected ``random.Random`` (same seed, same faults);
windows are on the broker's clock, so a rule with a window needs a virtual clock to be
reproducible — a real-clock broker refuses windows that start in the past.
"""
from __future__ import annotations

import enum
import random
from dataclasses import dataclass, field

from .events import Event, EventKind, EventLog

__all__ = ["Operation", "Action", "FaultRule", "FaultSet", "FaultError", "DIALECTS"]

DIALECTS = ("4.x", "5.x", "pulsar")


class FaultError(ValueError):
    """A fault rule that cannot be: the message names the field."""


class Operation(enum.Enum):
    SEND = "send"                       # 4.x SEND_MESSAGE(_V2)/batch, 5.x SendMessage, Pulsar SEND
    PULL = "pull"                       # 4.x PULL_MESSAGE, 5.x ReceiveMessage, Pulsar FLOW/dispatch
    SEND_BACK = "send_back"             # 4.x CONSUMER_SEND_MSG_BACK, 5.x nack / ChangeInvisibleDuration, Pulsar nack
    ACK = "ack"                         # 4.x UPDATE_CONSUMER_OFFSET / commit, 5.x AckMessage, Pulsar ACK
    HEARTBEAT = "heartbeat"             # 4.x HEART_BEAT, 5.x Heartbeat/Telemetry settings, Pulsar CONNECT/SUBSCRIBE
    ROUTE = "route"                     # 4.x GET_ROUTEINFO_BY_TOPIC, 5.x QueryRoute/QueryAssignment, Pulsar LOOKUP


class Action(enum.Enum):
    REFUSE = "refuse"
    DROP = "drop"
    DELAY = "delay"
    DUPLICATE = "duplicate"
    HOLD = "hold"


# which actions make sense for which operation
_ALLOWED = {
    Operation.SEND: {Action.REFUSE, Action.DROP, Action.DELAY},
    Operation.PULL: {Action.REFUSE, Action.DROP, Action.DELAY, Action.DUPLICATE, Action.HOLD},
    Operation.SEND_BACK: {Action.REFUSE, Action.DROP, Action.DELAY},
    Operation.ACK: {Action.REFUSE, Action.DROP, Action.DELAY},
    Operation.HEARTBEAT: {Action.REFUSE, Action.DROP, Action.DELAY},
    Operation.ROUTE: {Action.REFUSE, Action.DROP, Action.DELAY},
}


@dataclass(slots=True)
class FaultRule:
    """One rule. ``times``: fire on the next N matches (None: every match while the rule
    lives); ``probability``: fire on a match with this chance; ``window_ms``: (start, end)
    on the broker's clock, end exclusive (None: always). ``error`` overrides the
    dialect's default refusal (a 4.x response code, a 5.x status code name or number,
    a Pulsar ServerError name); ``stored``: a dropped send is stored first."""

    operation: Operation
    action: Action
    topic: str | None = None
    group: str | None = None
    client: str | None = None
    dialect: str | None = None
    broker: str | None = None
    times: int | None = None
    probability: float | None = None
    window_ms: tuple[int, int] | None = None
    delay_ms: int = 0
    error: str | int | None = None
    stored: bool = False
    id: int = 0
    hits: int = 0
    matched: int = 0
    _left: int | None = field(default=None, repr=False)

    def to_json(self) -> dict:
        return {"id": self.id, "operation": self.operation.value, "action": self.action.value, "topic": self.topic,
                "group": self.group, "client": self.client, "dialect": self.dialect, "broker": self.broker,
                "times": self.times, "left": self._left, "probability": self.probability,
                "window_ms": list(self.window_ms) if self.window_ms else None, "delay_ms": self.delay_ms,
                "error": self.error, "stored": self.stored, "hits": self.hits, "matched": self.matched}


def rule_from(operation, action, *, topic=None, group=None, client=None, dialect=None, broker=None, times=None,
              probability=None, window_ms=None, delay_ms=0, error=None, stored=False) -> FaultRule:
    """A checked rule (FaultError names the field that is wrong)."""
    try:
        op = operation if isinstance(operation, Operation) else Operation(str(operation).replace("-", "_"))
    except ValueError:
        raise FaultError(f"operation: {operation!r} is not one of "
                         f"{', '.join(o.value for o in Operation)}") from None
    try:
        act = action if isinstance(action, Action) else Action(str(action))
    except ValueError:
        raise FaultError(f"action: {action!r} is not one of {', '.join(a.value for a in Action)}") from None
    if act not in _ALLOWED[op]:
        raise FaultError(f"action: {act.value} does not apply to {op.value} (it takes "
                         f"{', '.join(sorted(a.value for a in _ALLOWED[op]))})")
    for name, value in (("topic", topic), ("group", group), ("client", client), ("broker", broker)):
        if value is not None and (not isinstance(value, str) or not value):
            raise FaultError(f"{name}: a name, got {value!r}")
    if dialect is not None and dialect not in DIALECTS:
        raise FaultError(f"dialect: {dialect!r} is not one of {', '.join(DIALECTS)}")
    if times is not None and (not isinstance(times, int) or isinstance(times, bool) or times < 1):
        raise FaultError(f"times: a whole number >= 1, got {times!r}")
    if probability is not None and (isinstance(probability, bool) or not isinstance(probability, (int, float))
                                    or not 0 <= probability <= 1):
        raise FaultError(f"probability: a number from 0 to 1, got {probability!r}")
    if not isinstance(delay_ms, int) or isinstance(delay_ms, bool) or delay_ms < 0:
        raise FaultError(f"delay: a duration >= 0, got {delay_ms!r} ms")
    if act is Action.DELAY and delay_ms == 0:
        raise FaultError("delay: a delay action needs a duration > 0")
    if act is not Action.DELAY and delay_ms:
        raise FaultError(f"delay: only the delay action takes a duration, not {act.value}")
    if stored and (op is not Operation.SEND or act is not Action.DROP):
        raise FaultError("stored: only a dropped send can be stored first")
    if window_ms is not None:
        try:
            start, end = (int(window_ms[0]), int(window_ms[1]))
        except (TypeError, ValueError, IndexError):
            raise FaultError(f"window: (start ms, end ms), got {window_ms!r}") from None
        if end <= start:
            raise FaultError(f"window: its end must come after its start, got {start}..{end}")
        window_ms = (start, end)
    return FaultRule(op, act, topic, group, client, dialect, broker, times, probability, window_ms, delay_ms,
                     error, bool(stored))


class FaultSet:
    """A broker's rules. ``active`` is the fronts' fast check: False while no rule is
    installed."""

    def __init__(self, clock, rng: random.Random, events: EventLog | None = None, broker: str = "") -> None:
        self._clock = clock
        self._rng = rng
        self._events = events
        self._broker = broker
        self._rules: list[FaultRule] = []
        self._ids = 0
        self.active = False
        self.applied = 0
        # called after the rules change (a front releases what a hold kept back)
        self.on_change: list = []

    def _changed(self) -> None:
        self.active = bool(self._rules)
        for fn in list(self.on_change):
            fn()

    # -- rules ----------------------------------------------------------------------------
    def add(self, rule: FaultRule) -> FaultRule:
        """Install ``rule`` (from ``rule_from``); returns it with its id. A window on a
        real-clock broker must not have started yet (its faults would depend on when the
        command ran)."""
        if rule.window_ms is not None and not getattr(self._clock, "is_virtual", False) \
                and rule.window_ms[0] < self._clock.now_ms():
            raise FaultError("window: this broker runs on the real clock; a window on its clock must start in the "
                             "future (use a virtual clock for windows in virtual time)")
        self._ids += 1
        rule.id = self._ids
        rule._left = rule.times
        self._rules.append(rule)
        self._changed()
        return rule

    def remove(self, rule_id: int) -> bool:
        """Remove a rule; a rule already gone is not an error (False)."""
        before = len(self._rules)
        self._rules = [r for r in self._rules if r.id != rule_id]
        if len(self._rules) == before:
            return False
        self._changed()
        return True

    def clear(self) -> int:
        n = len(self._rules)
        self._rules = []
        if n:
            self._changed()
        return n

    def rules(self) -> list[FaultRule]:
        return list(self._rules)

    # -- matching -------------------------------------------------------------------------
    def match(self, operation: Operation, *, topic: str | None = None, group: str | None = None,
              client: str | None = None, dialect: str | None = None, actions=None) -> FaultRule | None:
        """The rule that fires for this call, if any (counted, and told as an event).
        Rules are tried in the order they were added; a rule whose count is used up is
        removed. ``actions``: only rules with one of these actions (a front that asks at
        two points of one operation: Pulsar's FLOW for refuse and drop, each MESSAGE it
        dispatches for delay and duplicate)."""
        now = None
        for rule in self._rules:
            if rule.operation is not operation or (actions is not None and rule.action not in actions):
                continue
            if (rule.topic is not None and rule.topic != topic) or (rule.group is not None and rule.group != group) \
                    or (rule.client is not None and rule.client != client) \
                    or (rule.dialect is not None and rule.dialect != dialect) \
                    or (rule.broker is not None and rule.broker != self._broker):
                continue
            if rule.window_ms is not None:
                now = self._clock.now_ms() if now is None else now
                if not rule.window_ms[0] <= now < rule.window_ms[1]:
                    continue
            rule.matched += 1
            if rule.probability is not None and self._rng.random() >= rule.probability:
                continue
            rule.hits += 1
            self.applied += 1
            if rule._left is not None:
                rule._left -= 1
                if rule._left <= 0:
                    self.remove(rule.id)
            if self._events is not None and EventKind.FAULT in self._events.wanted:
                self._events.append(Event(EventKind.FAULT, self._clock.now_ms() if now is None else now,
                                          topic or "", group=group, msg_id=f"rule {rule.id}: {rule.action.value} "
                                                                          f"{rule.operation.value}"))
            return rule
        return None

    def holds(self, group: str | None, topic: str | None = None, dialect: str | None = None) -> bool:
        """Whether a HOLD rule stops deliveries to ``group`` now (not counted as a hit:
        a hold is a state, asked on every delivery)."""
        now = None
        for rule in self._rules:
            if rule.action is not Action.HOLD:
                continue
            if (rule.group is not None and rule.group != group) or (rule.topic is not None and rule.topic != topic) \
                    or (rule.dialect is not None and rule.dialect != dialect) \
                    or (rule.broker is not None and rule.broker != self._broker):
                continue
            if rule.window_ms is not None:
                now = self._clock.now_ms() if now is None else now
                if not rule.window_ms[0] <= now < rule.window_ms[1]:
                    continue
            return True
        return False
