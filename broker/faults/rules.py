"""Faults on demand: rules that make the broker misbehave the way production does, the
same for every dialect (issue 38).

Theory of operation. A rule is *where* (an operation, and optional matchers: topic,
group or subscription, client id, dialect, broker), *what* (an action) and *how often*
(the next N matches, a probability drawn from the broker's seeded random source, or a
window of the broker's clock). Each front — and the SDK's in-process transport — asks
the broker's door (``BrokerCore.fault_outcome``, door.py) at its one call into the core's
typed operation; the door matches here (``FaultSet.match``) and hands back the first
rule that fires as a typed outcome, which the front translates into its dialect's terms:

* REFUSE — the dialect's own error (a 4.x response code, a 5.x status, a Pulsar
  ServerError: a default per operation, or the rule's ``error``);
* DROP — no answer at all (the client times out); for a send, ``stored`` says whether
  the message was stored first: the "stored but the acknowledgement was lost" case that
  makes a producer's retry a duplicate;
* DELAY — the answer comes ``delay_ms`` later on the broker's clock (virtual in tests);
* DUPLICATE — a delivery is handed over twice (the store keeps one record);
* HOLD — deliveries to the matched group stop while the rule is active; each request it
  holds (a 4.x pull, a 5.x receive, a Pulsar dispatch) counts as a hit.

Every applied fault is an event (EventKind.FAULT) and counts on its rule, so a user sees
why a message came back. A rule whose ``times`` are used up is *spent*: it fires no more
but stays listed, with its counts, until it is removed or the rules are cleared. With no
rule installed a front's check is one attribute test.
Randomness comes only from the injected ``random.Random`` (same seed, same faults);
windows are on the broker's clock, so a rule with a window needs a virtual clock to be
reproducible — a real-clock broker refuses windows that start in the past.
"""
from __future__ import annotations

import enum
import random
import re
from dataclasses import MISSING, field, make_dataclass

from rocketmq_emulator.delay_scheduler.levels import format_duration

from ..events import Event, EventKind, EventLog
from ..rocketmq_model.groups import GroupNameError, validate_group_name
from ..log_text import printable
from ..pulsar_model.names import PulsarNameError, parse_topic, store_group, store_topic
from ..rocketmq_model.topics import TopicNameError, validate_topic_name

__all__ = ["Operation", "Action", "FaultRule", "RULE_FIELDS", "DOCUMENT_FIELDS", "DOCUMENT_NAMES",
           "rule_dataclass", "FaultSet", "FaultError", "DIALECTS", "place_rule", "list_rules",
           "register_error_codes", "ERROR_CODES", "MAX_DELAY_MS"]

DIALECTS = ("4.x", "5.x", "pulsar")

# The one bound of a delay action, whichever way the rule comes in (CLI, HTTP, the wire,
# the SDK, a simulation): a day is far past every client's request timeout and long poll
# (seconds; an answer later than the client waits acts as a drop, which says it plainly)
# and its milliseconds fit every clock and timer the fronts set (virtual or real).
MAX_DELAY_MS = 24 * 3600 * 1000
# times and windows are numbers of the broker's counters and clock: a Java long's range
_LONG_MAX = 2 ** 63 - 1
# a client id, a broker name: what the clients make is far shorter (a 4.x "ip@pid#n",
# a 5.x "host@pid@index@nanos", a Pulsar peer address), and a name is one printable line
_CLIENT_MAX = 255


class FaultError(ValueError):
    """A fault rule that cannot be: the message names the field."""


class Operation(str, enum.Enum):         # (a str: ``Operation.SEND == "send"`` with no call)
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


# each front's refusal codes: dialect -> resolve(name or number) -> its code, or None when
# the dialect has no such code (registered by the front's fault module as it is imported:
# the core knows no dialect's codes)
ERROR_CODES: dict = {}


def register_error_codes(dialect: str, resolve) -> None:
    ERROR_CODES[dialect] = resolve


def _check_error(error, dialect: str | None) -> None:
    """A refusal's ``error`` must be a code of a dialect it can fire in: a typo is a bad
    rule now, not a surprise when it fires (where it fires in a dialect that has no such
    code, its front answers with the operation's default)."""
    if isinstance(error, bool) or not isinstance(error, (int, str)) or error == "":
        raise FaultError(f"error: a code's name or number, got {error!r}")
    dialects = (dialect,) if dialect else DIALECTS
    if any(d not in ERROR_CODES for d in dialects):
        return                      # (a dialect whose front is not loaded here: its codes are unknown)
    if not any(ERROR_CODES[d](error) is not None for d in dialects):
        raise FaultError(f"error: {error!r} is not a refusal code of {' or '.join(dialects)} (a name such as "
                         f"SYSTEM_BUSY, INTERNAL_SERVER_ERROR or ServiceNotReady, or a number)")


# on a real clock, a window whose start is this close behind the clock starts "now" (the
# time the request took to get here), not in the past
_STARTS_NOW_MS = 1000

# which actions make sense for which operation
_ALLOWED = {
    Operation.SEND: {Action.REFUSE, Action.DROP, Action.DELAY},
    Operation.PULL: {Action.REFUSE, Action.DROP, Action.DELAY, Action.DUPLICATE, Action.HOLD},
    Operation.SEND_BACK: {Action.REFUSE, Action.DROP, Action.DELAY},
    Operation.ACK: {Action.REFUSE, Action.DROP, Action.DELAY},
    Operation.HEARTBEAT: {Action.REFUSE, Action.DROP, Action.DELAY},
    Operation.ROUTE: {Action.REFUSE, Action.DROP, Action.DELAY},
}


# what a client does on timers even when nothing happens (an idle span's requests)
_PERIODIC = frozenset({Operation.PULL, Operation.ACK, Operation.HEARTBEAT, Operation.ROUTE})


# A rule's fields, written once: (name, type, default; MISSING: needed) in this order —
# rule_from's keywords, FaultRule's first attributes, a scenario's FaultSpec
# (client_sdk/simulation/fault_rules.py) and a rule document's fields (placement.py,
# where two have their document names: DOCUMENT_NAMES).
RULE_FIELDS: tuple[tuple[str, str, object], ...] = (
    ("operation", "Operation", MISSING), ("action", "Action", MISSING),
    ("topic", "str | None", None), ("group", "str | None", None), ("client", "str | None", None),
    ("dialect", "str | None", None), ("broker", "str | None", None),
    ("times", "int | None", None), ("probability", "float | None", None),
    ("window_ms", "tuple[int, int] | None", None), ("delay_ms", "int", 0),
    ("error", "str | int | None", None), ("stored", "bool", False))
# a field's name in a rule document (the CLI, HTTP, a scenario file): durations as texts
DOCUMENT_NAMES = {"window_ms": "window", "delay_ms": "delay"}
DOCUMENT_FIELDS = tuple(DOCUMENT_NAMES.get(name, name) for name, _, _ in RULE_FIELDS)
_OPTIONS = {name: default for name, _, default in RULE_FIELDS[2:]}


def rule_dataclass(name: str, behaviour: type, extra=(), **options) -> type:
    """A dataclass with the rule's fields (then ``extra``) and the methods of
    ``behaviour``: FaultRule here, a scenario's FaultSpec."""
    declared = [(n, t) if d is MISSING else (n, t, d) for n, t, d in RULE_FIELDS]
    cls = make_dataclass(name, [*declared, *extra], bases=(behaviour,), **options)
    cls.__module__, cls.__doc__ = behaviour.__module__, behaviour.__doc__
    return cls


class _Rule:
    """One rule. ``times``: fire on the next N matches (None: every match while the rule
    lives); ``probability``: fire on a match with this chance; ``window_ms``: (start, end)
    on the broker's clock, end exclusive (None: always). ``error`` overrides the
    dialect's default refusal (a 4.x response code, a 5.x status code name or number,
    a Pulsar ServerError name); ``stored``: a dropped send is stored first."""

    __slots__ = ()

    def about(self, topic: str | None, group: str | None, client: str | None, dialect: str | None,
              broker: str) -> bool:
        """Whether this rule's matchers take a call about these (None matches anything)."""
        return (self.topic is None or self.topic == topic) and (self.group is None or self.group == group) \
            and (self.client is None or self.client == client) and (self.dialect is None or self.dialect == dialect) \
            and (self.broker is None or self.broker == broker)

    def in_window(self, now: int) -> bool:
        return self.window_ms is None or self.window_ms[0] <= now < self.window_ms[1]

    def to_json(self) -> dict:
        return {"id": self.id, "operation": self.operation.value, "action": self.action.value, "topic": self.topic,
                "group": self.group, "client": self.client, "dialect": self.dialect, "broker": self.broker,
                "times": self.times, "left": self._left, "probability": self.probability,
                "window_ms": list(self.window_ms) if self.window_ms else None, "delay_ms": self.delay_ms,
                "error": self.error, "stored": self.stored, "hits": self.hits, "matched": self.matched,
                "hits_on": dict(self.hits_on), "state": "spent" if self.spent else "active"}

    @property
    def spent(self) -> bool:
        """Its ``times`` are used up: it fires no more, and stays listed until removed."""
        return self._left is not None and self._left <= 0


FaultRule = rule_dataclass("FaultRule", _Rule, (
    ("id", "int", 0), ("hits", "int", 0), ("matched", "int", 0),
    ("_left", "int | None", field(default=None, repr=False)),
    ("_sets", "list", field(default_factory=list, repr=False)),      # the brokers' sets it is on
    ("hits_on", "dict", field(default_factory=dict))), slots=True)  # broker -> hits there
FaultRule.__qualname__ = "FaultRule"


def rule_from(operation, action, **options) -> FaultRule:
    """A checked rule (FaultError names the field that is wrong); ``options``: the other
    fields of RULE_FIELDS, by name."""
    unknown = sorted(set(options) - set(_OPTIONS))
    if unknown:
        raise FaultError(f"{unknown[0]}: not a field of a fault rule (the fields: {', '.join(_OPTIONS)})")
    o = {**_OPTIONS, **options}
    topic, group, client, dialect, broker = o["topic"], o["group"], o["client"], o["dialect"], o["broker"]
    times, probability, window_ms, delay_ms = o["times"], o["probability"], o["window_ms"], o["delay_ms"]
    error, stored = o["error"], o["stored"]
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
        if value is not None:
            _NAME_CHECKS[name](value)
    if dialect is not None and dialect not in DIALECTS:
        raise FaultError(f"dialect: {dialect!r} is not one of {', '.join(DIALECTS)}")
    if times is not None and (not isinstance(times, int) or isinstance(times, bool) or not 1 <= times <= _LONG_MAX):
        raise FaultError(f"times: a whole number >= 1 and at most {_LONG_MAX}, got {_shown_number(times)}")
    if probability is not None and (isinstance(probability, bool) or not isinstance(probability, (int, float))
                                    or not 0 <= probability <= 1):
        raise FaultError(f"probability: a number from 0 to 1, got {probability!r}")
    if not isinstance(delay_ms, int) or isinstance(delay_ms, bool) or delay_ms < 0:
        raise FaultError(f"delay: a duration >= 0, got {_shown_number(delay_ms)} ms")
    if delay_ms > MAX_DELAY_MS:
        raise FaultError(f"delay: at most {format_duration(MAX_DELAY_MS)} ({MAX_DELAY_MS} ms; a later answer is "
                         f"a drop to every client), got {_shown_number(delay_ms)} ms")
    if act is Action.DELAY and delay_ms == 0:
        raise FaultError("delay: a delay action needs a duration > 0")
    if act is not Action.DELAY and delay_ms:
        raise FaultError(f"delay: only the delay action takes a duration, not {act.value}")
    if error is not None:
        if act is not Action.REFUSE:
            raise FaultError(f"error: only the refuse action takes an error, not {act.value}")
        _check_error(error, dialect)
    if stored and (op is not Operation.SEND or act is not Action.DROP):
        raise FaultError("stored: only a dropped send can be stored first")
    if window_ms is not None:
        try:
            start, end = (int(window_ms[0]), int(window_ms[1]))
        except (TypeError, ValueError, IndexError):
            raise FaultError(f"window: (start ms, end ms), got {window_ms!r}") from None
        if end <= start:
            raise FaultError(f"window: its end must come after its start, got {_shown_number(start)}.."
                             f"{_shown_number(end)}")
        if start < 0 or end > _LONG_MAX:
            raise FaultError(f"window: times from 0 to {_LONG_MAX} ms on the broker's clock, got "
                             f"{_shown_number(start)}..{_shown_number(end)}")
        window_ms = (start, end)
    return FaultRule(op, act, topic, group, client, dialect, broker, times, probability, window_ms, delay_ms,
                     error, bool(stored))        # (positional: RULE_FIELDS' order)


def _shown_number(value) -> str:
    return printable(repr(value), 40)


def _shown(value: str) -> str:
    """A name as an error line quotes it: escaped, cut when long."""
    return f"'{printable(value, 60)}'"


def _a_name(field: str, value) -> str:
    if not isinstance(value, str) or not value:
        raise FaultError(f"{field}: a name, got {printable(repr(value), 60)}")
    return value


def _plain(field: str, value: str, limit: int, what: str) -> None:
    """A name that is one printable line of at most ``limit`` characters."""
    if printable(value, None) != value:
        raise FaultError(f"{field}: {_shown(value)} has control or format characters; {what}")
    if len(value) > limit:
        raise FaultError(f"{field}: {_shown(value)} is longer than {limit} characters; {what}")


def _dialects_name(field: str, rocketmq, pulsar, what: str):
    """A check of a matcher: a name RocketMQ's validator takes (``rocketmq``), or one
    printable line the Pulsar front's naming takes (``pulsar``): a matcher no client could
    ever send is a mistake."""
    def check(value) -> None:
        try:
            rocketmq(_a_name(field, value))
            return
        except (TopicNameError, GroupNameError):
            pass
        _plain(field, value, 300, what)
        try:
            pulsar(value)
        except PulsarNameError:
            raise FaultError(f"{field}: {_shown(value)} is neither a RocketMQ nor a Pulsar name this broker takes; "
                             f"{what}") from None
    return check


def _check_plain(field: str):
    def check(value) -> None:
        _plain(field, _a_name(field, value), _CLIENT_MAX, f"a {field} is one printable name of at most "
                                                          f"{_CLIENT_MAX} characters")
    return check


_NAME_CHECKS = {
    "topic": _dialects_name("topic", validate_topic_name, lambda name: store_topic(parse_topic(name)),
                            "a topic is a RocketMQ name (^[%|a-zA-Z0-9_-]+$, at most 127) or a Pulsar one "
                            "(persistent://t/ns/name)"),
    "group": _dialects_name("group", validate_group_name, store_group,
                            "a group is a RocketMQ group name (^[%|a-zA-Z0-9_-]+$, at most 120) or a Pulsar "
                            "subscription"),
    "client": _check_plain("client"), "broker": _check_plain("broker")}


class FaultSet:
    """A broker's rules. ``active`` is the fronts' fast check: False while no rule is
    installed."""

    def __init__(self, clock, rng: random.Random, events: EventLog | None = None, broker: str = "") -> None:
        self._clock = clock
        self._rng = rng
        self._events = events
        self._broker = broker
        self._rules: list[FaultRule] = []
        # rules whose count is used up: no longer asked, still listed (as spent, with what
        # they did) until removed or cleared, so a user sees that a "times 1" rule fired
        self._spent: list[FaultRule] = []
        self._ids = 0
        self.active = False
        self.holding = False                # a HOLD rule is installed (asked on held pulls)
        self.applied = 0
        # called after the rules change (a front releases what a hold kept back)
        self.on_change: list = []

    def now_ms(self) -> int:
        return self._clock.now_ms()

    def applies_now(self, rule_id: int) -> bool:
        """Whether rule ``rule_id`` is live here and in its window now (a refusal that
        lasts while its rule does: a Pulsar front's fenced producer)."""
        now = self._clock.now_ms()
        return any(r.id == rule_id and r.in_window(now) for r in self._rules)

    def hold_ends(self) -> int | None:
        """The earliest end of a hold rule's window running now (when what it holds must
        be tried again), None if no running hold has one."""
        now = self._clock.now_ms()
        ends = [r.window_ms[1] for r in self._rules
                if r.action is Action.HOLD and r.window_ms is not None and r.window_ms[0] <= now < r.window_ms[1]]
        return min(ends) if ends else None

    def reseed(self, rng: random.Random) -> None:
        """Draw the rules' probabilities from ``rng`` from now on (the simulator seeds them
        from the run's seed; a core's own source is fixed, so that a run without rules
        draws nothing from the broker's)."""
        self._rng = rng

    def _changed(self) -> None:
        self.active = bool(self._rules)
        self.holding = any(r.action is Action.HOLD for r in self._rules)
        for fn in list(self.on_change):
            fn()

    # -- rules ----------------------------------------------------------------------------
    def add(self, rule: FaultRule) -> FaultRule:
        """Install ``rule`` (from ``rule_from``); returns it with its id. A window on a
        real-clock broker must not have started yet (its faults would depend on when the
        command ran)."""
        if rule.window_ms is not None and not getattr(self._clock, "is_virtual", False) \
                and rule.window_ms[0] < self._clock.now_ms() - _STARTS_NOW_MS:
            raise FaultError("window: this broker runs on the real clock; a window on its clock must start in the "
                             "future (use a virtual clock for windows in virtual time)")
        if rule.id == 0:                    # (place_rule numbers a cluster's rule itself)
            self._ids += 1
            rule.id = self._ids
            rule._left = rule.times
        self._ids = max(self._ids, rule.id)
        self._rules.append(rule)
        rule._sets.append(self)
        self._changed()
        return rule

    def remove(self, rule_id: int) -> bool:
        """Remove a rule, live or spent; a rule already gone is not an error (False)."""
        before = len(self._rules) + len(self._spent)
        self._rules = [r for r in self._rules if r.id != rule_id]
        self._spent = [r for r in self._spent if r.id != rule_id]
        if len(self._rules) + len(self._spent) == before:
            return False
        self._changed()
        return True

    def clear(self) -> int:
        """Remove every rule, live or spent; how many there were."""
        n = len(self._rules) + len(self._spent)
        self._rules, self._spent = [], []
        if n:
            self._changed()
        return n

    def rules(self) -> list[FaultRule]:
        """The live rules (those that can still fire)."""
        return list(self._rules)

    def listed(self) -> list[FaultRule]:
        """Every rule a user sees: the live ones and the spent ones, by id."""
        return sorted(self._rules + self._spent, key=lambda r: r.id)

    def _retire(self, rule: FaultRule) -> None:
        """``rule``'s count is used up: off the rules asked, kept as spent."""
        if any(r is rule for r in self._rules):
            self._rules = [r for r in self._rules if r is not rule]
            self._spent.append(rule)
            self._changed()

    # -- matching -------------------------------------------------------------------------
    def match(self, operation: Operation, *, topic: str | None = None, group: str | None = None,
              client: str | None = None, dialect: str | None = None, actions=None) -> FaultRule | None:
        """The rule that fires for this call, if any (counted, and told as an event).
        Rules are tried in the order they were added; a rule whose count is used up is
        spent (listed, never asked again). ``actions``: only rules with one of these actions (a front that asks at
        two points of one operation: Pulsar's FLOW for refuse and drop, each MESSAGE it
        dispatches for delay and duplicate)."""
        now = None
        broker = self._broker
        for rule in self._rules:
            if rule.operation is not operation or (actions is not None and rule.action not in actions) \
                    or not rule.about(topic, group, client, dialect, broker):
                continue
            if rule.window_ms is not None:
                now = self._clock.now_ms() if now is None else now
                if not rule.in_window(now):
                    continue
            rule.matched += 1
            if rule.probability is not None and self._rng.random() >= rule.probability:
                continue
            self._fired(rule, topic, group, now)
            return rule
        return None

    def hold(self, group: str | None, topic: str | None = None, dialect: str | None = None) -> FaultRule | None:
        """The HOLD rule that keeps this delivery request back now, counted as matched and
        fired (what a 4.x pull's ``match`` counts when a hold takes it): asked once per
        request a front holds — a 5.x receive, a Pulsar dispatch — while ``holds`` is
        the uncounted look of a request already held. None: no hold applies."""
        now = self._clock.now_ms()
        for rule in self._rules:
            if rule.action is Action.HOLD and rule.about(topic, group, None, dialect, self._broker) \
                    and rule.in_window(now):
                rule.matched += 1
                self._fired(rule, topic, group, now)
                return rule
        return None

    def _fired(self, rule: FaultRule, topic: str | None, group: str | None, now: int | None) -> None:
        """Count a rule that fired here, tell it as an event; a rule whose count is then
        used up is spent on every broker it is on."""
        rule.hits += 1
        rule.hits_on[self._broker] = rule.hits_on.get(self._broker, 0) + 1
        self.applied += 1
        if self._events is not None and EventKind.FAULT in self._events.wanted:
            self._events.append(Event(EventKind.FAULT, self._clock.now_ms() if now is None else now,
                                      topic or "", group=group, msg_id=_told(rule)))
        if rule._left is not None:
            rule._left -= 1
            if rule._left <= 0:
                for fs in list(rule._sets):
                    fs._retire(rule)

    def about_periodic_work(self, topic_exists, group_exists) -> bool:
        """Whether a rule could touch a client's periodic requests — pulls, offset
        commits, heartbeats, route look-ups — of an existing topic or group
        (``topic_exists(name)``, ``group_exists(name)``): an in-process hub skipping idle
        spans (client_sdk/transport/idle_skip.py) must then run them one by one."""
        for rule in self._rules:
            if rule.operation in _PERIODIC and (rule.topic is None or topic_exists(rule.topic)) \
                    and (rule.group is None or group_exists(rule.group)):
                return True
        return False

    def holds(self, group: str | None, topic: str | None = None, dialect: str | None = None) -> bool:
        """Whether a HOLD rule stops deliveries to ``group`` now (not counted as a hit:
        a hold is a state, asked on every delivery)."""
        broker = self._broker
        return any(rule.action is Action.HOLD and rule.about(topic, group, None, dialect, broker)
                   and rule.in_window(self._clock.now_ms()) for rule in self._rules)


def place_rule(fault_sets: list[FaultSet], rule: FaultRule) -> FaultRule:
    """Install ``rule`` on several brokers' sets (the brokers of a cluster) as one object:
    its id, the matches it has left (``times``) and its hits are the cluster's, so "the
    next N sends" means N across the cluster, wherever the client sends them."""
    rule.id = 1 + max(fs._ids for fs in fault_sets)
    rule._left = rule.times
    for fs in fault_sets:
        fs.add(rule)
    return rule


def list_rules(fault_sets: list[FaultSet]) -> list[dict]:
    """Each rule of these sets once (spent ones too, ``state`` "spent"), as JSON, with
    ``brokers``: the brokers it is on."""
    listed: dict[int, dict] = {}
    for fs in fault_sets:
        for rule in fs.listed():
            entry = listed.get(rule.id)
            if entry is None:
                listed[rule.id] = entry = dict(rule.to_json(), brokers=[])
            entry["brokers"].append(fs._broker)
    return [listed[k] for k in sorted(listed)]


# A FAULT event tells the rule that fired as its msg_id "rule ID: ACTION OPERATION":
# written by _told, read back by fault_of (the dashboard's and /metrics' fault figures).
_TOLD = re.compile(r"rule (\d+): (\w+) (\w+)")


def _told(rule: FaultRule) -> str:
    return f"rule {rule.id}: {rule.action.value} {rule.operation.value}"


def fault_of(event) -> dict | None:
    """``{"rule", "action", "operation"}`` of a FAULT event (None: not one)."""
    m = _TOLD.fullmatch(event.msg_id or "")
    if m is None:
        return None
    return {"rule": int(m.group(1)), "action": m.group(2), "operation": m.group(3)}
