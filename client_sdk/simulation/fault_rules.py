"""Fault rules in a scenario (issue 38): the broker's own rules (broker/faults/rules.py), given
as data, installed on the simulated broker(s) and applied by the fronts the simulated
clients use.

A scenario's ``faults`` is a list of rules with the fields of ``EmbeddedBroker.faults.add``:
operation, action, topic, group, client, dialect, broker, times, probability, window,
delay, error, stored. ``window`` is (start, end) on the run's virtual clock, measured from
the run's start (a duration like "10m" or milliseconds); ``delay`` a duration. Each rule
goes to every broker of the run (``broker``: that one only), as EmbeddedBroker does; its
probability is drawn from the broker's random source, which the run's seed seeds: the
same seed gives the same faults, the same summary and the same store bytes.

Where rules act in a simulation. The producer and the 4.x groups are the SDK's clients:
while a rule is installed their requests go, as commands, through the broker's 4.x front,
which applies the rules there (broker/fronts/remoting/fault_answers.py: send, pull,
send-back, ack — offset commits, in pulls too —, heartbeat, route). A Pulsar group with
``retry_letters`` runs the SDK's Pulsar client over the broker's Pulsar front, which
applies the rules it knows (broker/fronts/pulsar: SEND, so its retry and dead letters).
The simulated 5.x groups call the core's operations without a front; their consumer
asks the rules for its receives (pull) and acks itself, as the 5.x front would, and
reacts as a 5.x client does (pop_consumer.py); their change-invisible-time (send_back)
is not faulted, nor are heartbeats and routes, which they do not send. The simulated
Pulsar groups with negative acks call the core without a front and apply no rule. So a
rule is refused when it could only match what no front or consumer asks (``dialect``
"5.x" on another operation than pull or ack, ``dialect`` "pulsar" without a retry-letter
group, a ``group`` of a Pulsar group with negative acks, or of a 5.x group on another
operation than pull or ack); every group's messages come through the faulted sends.

The SDK's clients in a simulation call the broker synchronously, in process: a request
they wait for (a send, a send-back, a route lookup) cannot wait on the virtual clock, so
a ``drop`` or ``delay`` of one is the client's timeout at once. A delayed send is stored
before its answer is lost: like a ``drop`` with ``stored``, it may make the producer's
retry a duplicate (the checker knows, ``DUPLICATING``). Pulls wait on the clock, so a
delayed pull answer comes ``delay`` later.

A rule without a window acts for the run's duration: the run then settles without it (a
rule refusing every pull for good would leave every message unconsumed, and the "lost"
invariant could say nothing). A window is on the run's clock and may reach past the
duration, as a write_off window may. A rule with a window is installed just before its
window opens and removed when it closes (no match outside it either way): outside every
window the clients keep their typed in-process calls, so a rule costs only while it can
act. The SDK's clients start
(at the run's start, after a crash, when a stopped group comes back) with no rule
installed: unlike the Java client, which logs a failed first heartbeat or route lookup
and starts, they fail to start then (RuleBook.suspended).
"""
from __future__ import annotations

import random
from contextlib import contextmanager
from dataclasses import fields
from typing import Any

from rocketmq_emulator.broker.facade.across import place_fault_rule, remove_fault_rule
from rocketmq_emulator.broker.faults.rules import (DOCUMENT_FIELDS, DOCUMENT_NAMES, Action, FaultError, Operation,
                                                   rule_dataclass, rule_from)
from rocketmq_emulator.delay_scheduler import DelayLevelError, format_duration, parse_duration

from ..producer import CLIENT_INNER_PRODUCER_GROUP

__all__ = ["FaultSpec", "fault_spec", "check_fault_specs", "may_duplicate", "parse_fault", "RuleBook"]


class _Invalid(ValueError):
    """A fault entry that cannot be; scenario.py turns it into a ScenarioError."""


class _Spec:
    """One rule of a scenario. ``window_ms``: (start, end) in ms after the run's start
    (None: the whole run); ``delay_ms``: the delay action's duration."""

    def rule(self, start_ms: int = 0):
        """The broker's FaultRule (its window on the clock of a run that started at
        ``start_ms``); FaultError names a bad field."""
        window = None if self.window_ms is None else (start_ms + self.window_ms[0], start_ms + self.window_ms[1])
        options = {f.name: getattr(self, f.name) for f in fields(self)[2:]}
        options["window_ms"] = window
        return rule_from(self.operation, self.action, **options)

    def describe(self) -> str:
        what = f"{self.action} {self.operation}"
        if self.action == "delay":
            what += f" {format_duration(self.delay_ms)}"
        if self.stored:
            what += " (stored first)"
        if self.error is not None:
            what += f" with {self.error}"
        where = [f"{key} {getattr(self, key)}" for key in ("topic", "group", "client", "dialect", "broker")
                 if getattr(self, key) is not None]
        how = []
        if self.times is not None:
            how.append(f"{self.times} time(s)")
        if self.probability is not None:
            how.append(f"p={self.probability:g}")
        if self.window_ms is not None:
            how.append(f"{format_duration(self.window_ms[0])}..{format_duration(self.window_ms[1])}")
        return " ".join([what] + where + how)

    def to_dict(self) -> dict:
        out = {"operation": self.operation, "action": self.action}
        for f in fields(self)[2:]:
            value = getattr(self, f.name)
            if value != f.default:
                out[f.name] = list(value) if f.name == "window_ms" else value
        return out

    def to_entry(self) -> dict:
        """The rule as a scenario file's entry (``from_data`` reads it back as it was)."""
        return {DOCUMENT_NAMES.get(key, key): value for key, value in self.to_dict().items()}


# a scenario's FaultSpec: the rule's fields (broker/faults/rules.RULE_FIELDS), frozen;
# operation and action as the texts a scenario gives
FaultSpec = rule_dataclass("FaultSpec", _Spec, frozen=True)
FaultSpec.__qualname__ = "FaultSpec"
_KEYS = DOCUMENT_FIELDS


def fault_spec(operation, action, *, window=None, delay=0, **matchers) -> FaultSpec:
    """A FaultSpec from EmbeddedBroker.faults.add's arguments: ``window`` (start, end)
    after the run's start, each ms or a duration ("10m"); ``delay`` ms or a duration."""
    unknown = sorted(set(matchers) - set(_KEYS))
    if unknown:
        raise _Invalid(f"unknown field(s) {', '.join(unknown)}; known: {', '.join(_KEYS)}")
    return FaultSpec(_text(operation, "operation").replace("-", "_"), _text(action, "action"), window_ms=_window(window),
                     delay_ms=_ms(delay, "delay"), **matchers)


def from_data(entry: Any) -> FaultSpec:
    """A FaultSpec from a scenario's JSON entry (or an already built one)."""
    if isinstance(entry, FaultSpec):
        return entry
    if not isinstance(entry, dict):
        raise _Invalid(f"a fault rule is an object {{operation, action, ...}}, got {entry!r}")
    for key in ("operation", "action"):
        if key not in entry:
            raise _Invalid(f"{key}: missing (a rule needs an operation and an action)")
    data = dict(entry)
    return fault_spec(data.pop("operation"), data.pop("action"), **data)


def check_fault_specs(specs, *, duration_ms: int, brokers: tuple[str, ...], groups: dict[str, str],
                      topics: tuple[str, ...], transactional: bool, producer_group: str) -> None:
    """Every rule as the broker would take it, and what a simulation adds: windows on the
    run's clock, within the duration; known brokers, groups and topics; no rule that could
    only match a simulated 5.x or Pulsar group (they have no front). Raises _Invalid
    (``faults[i]: field: ...``)."""
    for i, spec in enumerate(specs):
        try:
            _check(spec, duration_ms, brokers, groups, topics, transactional, producer_group)
        except (FaultError, _Invalid) as exc:
            raise _Invalid(f"faults[{i}]: {exc}") from None


def _check(spec: FaultSpec, duration_ms: int, brokers, groups: dict[str, str], topics, transactional,
           producer_group: str) -> None:
    if not isinstance(spec.stored, bool):
        raise _Invalid(f"stored: true or false, got {spec.stored!r}")
    if spec.error is not None:          # (first: this run's fronts say more than every dialect's codes)
        _check_error(spec, "pulsar-letters" in groups.values())
    rule = spec.rule()
    if spec.window_ms is not None:
        start, end = rule.window_ms
        if start < 0:
            raise _Invalid(f"window: it starts at {start} ms, before the run")
        if start > duration_ms:
            raise _Invalid(f"window: it starts at {format_duration(start)}, after the end of the run (duration "
                           f"{format_duration(duration_ms)}), so the rule would never act")
    if spec.broker is not None and spec.broker not in brokers:
        raise _Invalid(f"broker: no broker named {spec.broker!r} in this run (there are {', '.join(brokers)}; "
                       f"give brokers N for more)")
    where = ("rules act on the 4.x front (the producer and 4.x groups), the Pulsar front (Pulsar groups with "
             "retry_letters) and a 5.x group's receives and acks")
    five_op = rule.operation in (Operation.PULL, Operation.ACK)
    if (spec.dialect == "5.x" and not five_op) or (spec.dialect == "pulsar" and "pulsar-letters" not in groups.values()):
        raise _Invalid(f"dialect: the simulated {spec.dialect} groups would never meet this {rule.operation.value} "
                       f"rule; {where}")
    if spec.group is not None:
        kind = groups.get(spec.group)
        if kind == "pulsar" or (kind == "5.x" and not five_op):
            raise _Invalid(f"group: {spec.group} is a {kind} group, whose simulated consumer never meets this "
                           f"{rule.operation.value} rule; {where}")
        known = list(groups) + [producer_group, CLIENT_INNER_PRODUCER_GROUP]
        if spec.group not in known:
            raise _Invalid(f"group: {spec.group!r} is not a group of this run (groups: {', '.join(known)})")
    # (a group's retry and dead-letter topics name it: %RETRY%<group>, <topic>-<group>-RETRY)
    if spec.topic is not None and not any(name in spec.topic for name in (*topics, *groups)):
        raise _Invalid(f"topic: {spec.topic!r} is not a topic of this run (topics: {', '.join(topics)}, or a "
                       f"group's retry or dead-letter topic)")
    if transactional and rule.operation is Operation.SEND and rule.action is not Action.REFUSE:
        raise _Invalid(f"action: a {rule.action.value} of a send would leave a transactional producer's half "
                       f"message without its producer knowing; refuse sends in a transactional run")


def _check_error(spec: FaultSpec, pulsar_front: bool) -> None:
    """A refusal's code must be one each front the rule can reach knows: a 4.x response
    code (a number or a name), and with a retry-letter group a Pulsar ServerError."""
    error = spec.error
    if isinstance(error, bool) or not isinstance(error, (int, str)):
        raise _Invalid(f"error: a code, as a number or a name, got {error!r}")
    if isinstance(error, int) or error.isdigit():
        return
    if spec.dialect in (None, "4.x"):
        from rocketmq_emulator.broker.fronts.remoting.protocol import ResponseCode
        if error not in ResponseCode.__members__:
            raise _Invalid(f"error: {error!r} is not a 4.x response code (like SYSTEM_ERROR, SYSTEM_BUSY, "
                           f"TOPIC_NOT_EXIST)")
    if pulsar_front and spec.dialect in (None, "pulsar"):
        from rocketmq_emulator.broker.fronts.pulsar.schema import ENUMS
        if error not in dict(ENUMS["ServerError"]):
            raise _Invalid(f"error: {error!r} is not a Pulsar ServerError (like PersistenceError, ServiceNotReady)")


def may_duplicate(spec: FaultSpec, protocol: str | None = None) -> bool:
    """Whether the rule, acting on a request of a ``protocol`` group (None: not a
    consumer's), can make an application see a message again: a send stored whose
    answer was lost (a drop with ``stored``, or a delay, which the in-process client
    cannot wait for), a duplicated pull, a 5.x receive handed over late (its messages may
    have come back meanwhile), a lost or late offset commit or ack (what was consumed
    comes again: a 5.x message when its invisible time ends, a 4.x one when a queue moves
    or a consumer restarts), a send-back stored but answered late (the client retries
    locally as well), a heartbeat or route fault (a consumer the others do not see takes
    their queues)."""
    op, action = spec.operation.replace("-", "_"), spec.action
    if op == "send":
        return action == "delay" or (action == "drop" and spec.stored)
    if op == "pull":
        return action == "duplicate" or (action == "delay" and protocol == "5.x")
    if op == "send_back":
        return action == "delay"
    return op in ("ack", "heartbeat", "route")


def _text(value, field: str) -> str:
    if isinstance(value, (Operation, Action)):
        return value.value
    if not isinstance(value, str):
        raise _Invalid(f"{field}: a name, got {value!r}")
    return value


def _ms(value, field: str) -> int:
    if isinstance(value, bool):
        raise _Invalid(f"{field}: a duration like '5s' or milliseconds, got {value!r}")
    if isinstance(value, int):
        return value
    if isinstance(value, str):
        try:
            return parse_duration(value)
        except (DelayLevelError, ValueError) as exc:
            raise _Invalid(f"{field}: {exc}") from None
    raise _Invalid(f"{field}: a duration like '5s' or milliseconds, got {value!r}")


def _window(value) -> tuple[int, int] | None:
    if value is None:
        return None
    if isinstance(value, dict):
        unknown = sorted(set(value) - {"start", "end"})
        if unknown or "start" not in value or "end" not in value:
            raise _Invalid(f"window: {{start, end}} or [start, end], got {value!r}")
        value = (value["start"], value["end"])
    if isinstance(value, str):
        start, sep, end = value.partition("..")
        if not sep:
            raise _Invalid(f"window: START..END (like 10m..12m), got {value!r}")
        value = (start, end)
    if not isinstance(value, (list, tuple)) or len(value) != 2:
        raise _Invalid(f"window: (start, end) after the run's start, got {value!r}")
    start, end = _ms(value[0], "window"), _ms(value[1], "window")
    if end <= start:
        raise _Invalid(f"window: its end must come after its start, got {format_duration(start)}.."
                       f"{format_duration(end)}")
    return start, end


class RuleBook:
    """A run's rules on its brokers, across crashes: which are installed (a windowed one
    from just before its window to its end), what each has hit, and which installed rule
    an applied-fault event names. A rule's ``times`` is per broker (as EmbeddedBroker's);
    after a crash a new broker core gets what is left of it."""

    def __init__(self, specs: tuple[FaultSpec, ...], start_ms: int, duration_ms: int) -> None:
        self.specs = specs
        self.start_ms = start_ms
        self.duration_ms = duration_ms
        self.open = {i for i, s in enumerate(specs) if s.window_ms is None or s.window_ms[0] <= 1}
        self.placed: list[list[Any]] = [[] for _ in specs]                # FaultRule, every boot's
        self.live: list[list[tuple[list, Any]]] = [[] for _ in specs]     # (cores, FaultRule) installed now
        self.by_id: dict[tuple[str, int], int] = {}                       # (broker, rule id) -> spec index
        self._cores: list = []

    def timeline(self) -> list[tuple[int, str, int]]:
        """(ms after the start, "open" or "close", spec index): a windowed rule opens just
        before its window and closes at its end; one without a window closes when the
        duration ends (the run then settles without it)."""
        out = []
        for i, s in enumerate(self.specs):
            if s.window_ms is None:
                out.append((self.duration_ms, "close", i))
            else:
                out.append((max(0, s.window_ms[0] - 1), "open", i))
                out.append((s.window_ms[1], "close", i))
        return out

    def boot(self, cores: list, seed: str) -> None:
        """New broker cores (the first boot, or after a crash): the open rules on them,
        drawing their probabilities from a source seeded from ``seed`` (the run's seed and
        boot: a broker core's own rules draw from a fixed one)."""
        for core in cores:
            core.reseed_faults(random.Random(f"{seed}/{core.config.broker_name}"))
        self._cores = cores
        self.by_id = {}
        self.live = [[] for _ in self.specs]
        for i in sorted(self.open):
            self._install(i)

    @contextmanager
    def suspended(self):
        """No rule installed while the SDK's clients start: their start fails outright when
        its first heartbeat or route lookup is refused (the Java client logs those and
        starts), so a client's start is not faulted; what it does after is. (Counts are
        kept: the rules come back with what is left of them.)"""
        for i in self.open:
            self._uninstall(i)
        try:
            yield
        finally:
            for i in sorted(self.open):
                self._install(i)

    def open_rule(self, i: int) -> None:
        if i not in self.open:
            self.open.add(i)
            self._install(i)

    def close_rule(self, i: int) -> None:
        self.open.discard(i)
        self._uninstall(i)

    def _uninstall(self, i: int) -> None:
        for cores, rule in self.live[i]:
            remove_fault_rule(cores, rule.id)   # (one its count used up is gone already)
        self.live[i] = []

    def _install(self, i: int) -> None:
        """The spec's rule on every broker as one rule (broker/facade/across.place_fault_rule: "times"
        counts across the cluster, as on a running broker), with what is left of its
        count after earlier boots."""
        spec = self.specs[i]
        rule = spec.rule(self.start_ms)
        if spec.times is not None:
            left = spec.times - self.hits(i)
            if left <= 0:
                return
            rule.times = left
        cores = list(self._cores)
        place_fault_rule(cores, rule)
        self.placed[i].append(rule)
        self.live[i].append((cores, rule))
        for core in cores:
            self.by_id[(core.config.broker_name, rule.id)] = i

    def spec_of(self, broker: str, event) -> int | None:
        """The spec index of the rule an applied-fault event names ("rule N: ...")."""
        text = event.msg_id or ""
        if not text.startswith("rule "):
            return None
        rule_id = text[5:].split(":", 1)[0]
        return self.by_id.get((broker, int(rule_id))) if rule_id.isdigit() else None

    def hits(self, i: int) -> int:
        return sum(rule.hits for rule in self.placed[i])

    def summary(self) -> list[dict]:
        """Per rule: what it is and how often it was applied (and where, in a cluster)."""
        out = []
        for i, spec in enumerate(self.specs):
            entry = {"rule": i, "describe": spec.describe(), **spec.to_dict(), "applied": self.hits(i),
                     "matched": sum(rule.matched for rule in self.placed[i])}
            by_broker: dict[str, int] = {}
            for rule in self.placed[i]:
                for name in rule.hits_on:
                    by_broker[name] = by_broker.get(name, 0) + rule.hits_on[name]
            if spec.broker is None and len(self._cores) > 1:       # (a rule on one broker: its own)
                entry["applied_by_broker"] = {c.config.broker_name: by_broker.get(c.config.broker_name, 0)
                                              for c in sorted(self._cores, key=lambda c: c.config.broker_name)}
            out.append(entry)
        return out


_NUMBERS = {"times": int, "probability": float}


def parse_fault(text: str) -> FaultSpec:
    """``--fault`` as the simulate command takes it: a JSON object, or
    ``OPERATION:ACTION[,key=value...]`` with the JSON object's keys
    (``send:drop,stored,probability=0.1,window=1m..5m``; ``stored`` alone is true)."""
    text = text.strip()
    if text.startswith("{"):
        import json
        try:
            return from_data(json.loads(text))
        except json.JSONDecodeError as exc:
            raise _Invalid(f"not a JSON object: {exc.msg}") from None
    head, _, rest = text.partition(",")
    operation, colon, action = head.partition(":")
    if not colon or not operation or not action:
        raise _Invalid(f"OPERATION:ACTION[,key=value...] (like send:drop,stored,probability=0.1) or a JSON object, "
                       f"got {text!r}")
    entry: dict[str, Any] = {"operation": operation, "action": action}
    for item in filter(None, (part.strip() for part in rest.split(","))):
        key, eq, value = item.partition("=")
        if not eq:
            entry[key] = True if key == "stored" else value
            if key != "stored":
                raise _Invalid(f"{key}: give it a value ({key}=...)")
            continue
        if key in _NUMBERS:
            try:
                entry[key] = _NUMBERS[key](value)
            except ValueError:
                raise _Invalid(f"{key}: a number, got {value!r}") from None
        elif key == "stored":
            if value not in ("true", "false"):
                raise _Invalid(f"stored: true or false, got {value!r}")
            entry[key] = value == "true"
        else:
            entry[key] = value
    return from_data(entry)
