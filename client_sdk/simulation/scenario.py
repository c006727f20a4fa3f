"""What a simulation run does: the scenario, as data, validated.

A scenario is plain data (a JSON file or keyword options) so that a run is named by
(scenario, seed) and nothing else. Durations are RocketMQ-style strings ("90s", "6h")
or milliseconds; every field has a default, and an unknown field is an error rather
than silently ignored (a typo would otherwise change nothing and look like a result).

Failure patterns of a group's listener, applied to message number i (0-based, in the
order the producers send them):

  poison_every N       i % N == 0 fails on every delivery (W1: 100)
  fail_once_every N    i % N == fail_once_remainder fails its first delivery only (W1: 10, 5)
  fail_probability p   any other delivery fails with probability p (from the seed)
  slow_probability p   a delivery overruns consumeTimeout (the listener "sleeps" on the
                       virtual clock while the rest of the run, faults included, goes on);
                       the consumer's expiry scan sends it back, or, when it cannot, the
                       listener's late verdict decides. In a 5.x group the delivery is
                       never answered: it comes back when its invisible time ends

A group's ``protocol`` is "4.x" (the SDK's PushConsumer: pull, send-back, delay levels),
"5.x" (pop with an invisible time, server-side attempts and DLQ: pop_consumer.py) or
"pulsar" (a Shared subscription with the Pulsar client's negative acks, ack timeout and
dead-letter policy: pulsar_consumer.py); ``invisible_seconds`` is a 5.x group's invisible
time per receive, ``batch_size`` its receive batch. A Pulsar group's max_reconsume_times
is its max_redeliver_count (-1: 16, as the Java client's default), ``nack_delay_seconds``
its negative-ack delay, ``ack_timeout_seconds`` its ack timeout (0: none; a slow delivery
then never comes back, so slow_probability needs one); its topic is one log (1 queue).
With ``retry_letters`` a Pulsar group retries through its retry-letter topic instead, with
the SDK's Pulsar consumer (client_sdk.pulsar_client, seed 000): "increasing" (1 s, 5 s,
10 s ... by attempt), "level" (``retry_level`` of the ladder each time) or "delay"
(``retry_delay_seconds`` each time); its topic is then a Pulsar one, named in the store's
terms: ``pulsar|<tenant>|<namespace>|<name>``.

A producer with ``transactional`` sends half messages (the SDK's 4.x transactional
send) and ends each as the seed draws it: ``rollback_probability`` (its local transaction
rolls back), ``commit_at_check_probability`` (UNKNOW, committed when the broker checks
back, ``transactionTimeOut`` later), ``never_answered_probability`` (UNKNOW at every
check: discarded into TRANS_CHECK_MAX_TIME_TOPIC after ``transactionCheckMax`` checks);
the rest commit at once. Only committed messages count as accepted for the groups.

A scenario with ``brokers`` N > 1 runs a cluster (broker-a, broker-b, ... behind one
name server, every topic on every broker): 4.x groups only (the 5.x and Pulsar fronts
serve one broker). ``broker_write_off`` switches one broker's write permission off for
a window (its producers move to another broker, a send-back it refuses is published by
the client's inner producer to another one); ``broker_down`` stops one broker for a
while (out of every route, its connections cut; back from its store). ``write_off``
windows switch every broker off. At least one broker is up at every moment.

``faults`` are fault rules on the broker(s), with the fields of EmbeddedBroker.faults.add
(operation, action, topic, group, client, dialect, broker, times, probability, window,
delay, error, stored; fault_rules.py says where they act in a simulation): a window is on
the run's clock from its start, and must start within the duration (a rule without one
acts for the duration, and the run settles without it); the probabilities come from the
run's seed. A JSON entry: {"operation": "send", "action": "drop",
"stored": true, "probability": 0.1, "window": ["1m", "5m"]}.
"""
from __future__ import annotations

import json
import zlib
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

from rocketmq_emulator.broker.pulsar_model.names import STORE_PREFIX
from rocketmq_emulator.delay_scheduler import DelayLevelError, format_duration, parse_duration

from . import fault_rules
from .fault_rules import FaultSpec

__all__ = ["Scenario", "GroupSpec", "ProducerSpec", "TopicSpec", "ConsumerRestart", "WriteOffWindow",
           "ScenarioError", "w1_scenario", "FaultSpec", "START_MS", "message_properties"]

START_MS = 1_767_225_600_000          # 2026-01-01T00:00:00Z: every run starts at the same instant


PRODUCER_GROUP = "SimProducer"      # the group of the run's producer
PROTOCOLS = ("4.x", "5.x", "pulsar")
PROTOCOL_NAMES = {"4.x": "4.x", "5.x": "5.x", "pulsar": "Pulsar"}
# Group settings only one protocol's consumers read: a group of another protocol that
# sets one (away from its default) would silently run without it, so it is refused.
_PROTOCOL_FIELDS = {"invisible_seconds": "5.x", "nack_delay_seconds": "pulsar", "ack_timeout_seconds": "pulsar",
                    "retry_letters": "pulsar", "retry_level": "pulsar", "retry_delay_seconds": "pulsar"}


class ScenarioError(ValueError):
    """A scenario that cannot run; the message is one readable line."""


_REGIONS = ("eu", "us", "asia")


def message_properties(number: int) -> dict[str, str]:
    """The user properties of message ``number`` in a run with a SQL92 group: ``region``
    (eu, us, asia) and ``amount`` (0..1023; missing for about one message in seven, so
    selectors meet NULL too). A function of the number alone: a run stays named by
    (scenario, seed), and the checker knows each group's messages without the broker."""
    h = zlib.crc32(b"%d" % number)
    props = {"region": _REGIONS[h % 3]}
    if h % 7:
        props["amount"] = str(h >> 8 & 1023)
    return props


@dataclass(frozen=True)
class TopicSpec:
    name: str = "SimTopic"
    queues: int = 4


@dataclass(frozen=True)
class ProducerSpec:
    topic: str = "SimTopic"
    rate: float = 100.0                # messages per virtual second
    body_size: int = 100               # bytes (at least the 9-byte message number prefix)
    # A transactional producer (the SDK's send_message_in_transaction, 4.x): each message
    # is a half message whose end is drawn from the seed: rolled back by its local
    # transaction, left UNKNOW and committed at the broker's first check-back, left UNKNOW
    # and never answered (discarded after transactionCheckMax checks), or (the rest)
    # committed by its local transaction.
    transactional: bool = False
    rollback_probability: float = 0.0
    commit_at_check_probability: float = 0.0
    never_answered_probability: float = 0.0

    @property
    def transaction_draws(self) -> tuple[float, float, float]:
        return (self.rollback_probability, self.commit_at_check_probability, self.never_answered_probability)


@dataclass(frozen=True)
class GroupSpec:
    name: str = "SimGroup"
    topic: str = "SimTopic"
    orderly: bool = False
    consumers: int = 1
    batch_size: int = 1                # consumeMessageBatchMaxSize; failures use ackIndex
    max_reconsume_times: int = -1      # -1: RocketMQ's default (16 concurrently)
    consume_timeout_minutes: int = 15
    poison_every: int = 0
    fail_once_every: int = 0
    fail_once_remainder: int = 0
    fail_probability: float = 0.0
    slow_probability: float = 0.0
    protocol: str = "4.x"              # "5.x": pop, invisible time, server-side retry and DLQ
    invisible_seconds: int = 60        # 5.x: invisible time of each receive
    nack_delay_seconds: int = 60       # pulsar: negative_ack_redelivery_delay (the client's default)
    ack_timeout_seconds: int = 0       # pulsar: unacked_messages_timeout (0: off; else at least 10 s)
    retry_letters: str = ""            # pulsar: "" (negative acks), "increasing", "level" or "delay"
    retry_level: int = 1               # pulsar, retry_letters "level": the ladder's level
    retry_delay_seconds: int = 10      # pulsar, retry_letters "delay": 1 to 864,000
    # 4.x and 5.x: a SQL92 selector over the messages' user properties (message_properties:
    # region, amount); the group gets only the messages it takes. "": every message
    sql: str = ""

    @property
    def max_attempts_failed(self) -> int:
        """Failed deliveries after which a message is dead-lettered (maxReconsumeTimes + 1)."""
        return (16 if self.max_reconsume_times == -1 else self.max_reconsume_times) + 1


_GROUP_DEFAULTS = {f.name: f.default for f in fields(GroupSpec)}


@dataclass(frozen=True)
class WriteOffWindow:
    start_ms: int
    end_ms: int


@dataclass(frozen=True)
class BrokerWindow:
    """One broker's fault from ``start_ms`` to ``end_ms``: write off, or down."""
    broker: str
    start_ms: int
    end_ms: int


@dataclass(frozen=True)
class ConsumerRestart:
    group: str
    at_ms: int
    down_ms: int = 30_000


@dataclass(frozen=True)
class Scenario:
    seed: int = 0
    messages: int = 1000
    duration_ms: int = 6 * 3600 * 1000
    settle_ms: int = 6 * 3600 * 1000   # extra virtual time allowed for retries to finish
    topics: tuple[TopicSpec, ...] = (TopicSpec(),)
    producers: tuple[ProducerSpec, ...] = (ProducerSpec(),)
    groups: tuple[GroupSpec, ...] = (GroupSpec(),)
    crashes_ms: tuple[int, ...] = ()
    write_off: tuple[WriteOffWindow, ...] = ()
    consumer_restarts: tuple[ConsumerRestart, ...] = ()
    message_delay_level: str | None = None   # None: the 18 default levels
    brokers: int = 1
    broker_write_off: tuple[BrokerWindow, ...] = ()
    broker_down: tuple[BrokerWindow, ...] = ()
    # fault rules on the broker(s) (fault_rules.py): FaultSpecs, or their JSON objects
    faults: tuple[FaultSpec, ...] = ()

    def __post_init__(self) -> None:
        if not isinstance(self.faults, (list, tuple)):
            raise ScenarioError(f"faults must be a list of rules, got {self.faults!r}")
        specs = []
        for i, entry in enumerate(self.faults):
            try:
                specs.append(fault_rules.from_data(entry))
            except fault_rules._Invalid as exc:
                raise ScenarioError(f"faults[{i}]: {exc}") from None
        object.__setattr__(self, "faults", tuple(specs))
        _validate(self)

    # -- building ----------------------------------------------------------------------
    @classmethod
    def from_dict(cls, data: dict[str, Any], **overrides) -> "Scenario":
        """A scenario from JSON-shaped data (durations as strings or ms); ``overrides``
        (already typed) win over ``data``."""
        if not isinstance(data, dict):
            raise ScenarioError("a scenario is a JSON object")
        _no_unknown("scenario", data, cls)
        kw: dict[str, Any] = {}
        for key, value in data.items():
            if key in ("duration", "settle"):
                kw[key + "_ms"] = _duration(key, value)
            elif key == "topics":
                kw[key] = tuple(_build(TopicSpec, "topic", t) for t in _list(key, value))
            elif key == "producers":
                kw[key] = tuple(_build(ProducerSpec, "producer", p) for p in _list(key, value))
            elif key == "groups":
                kw[key] = tuple(_build(GroupSpec, "group", g) for g in _list(key, value))
            elif key == "crashes":
                kw["crashes_ms"] = tuple(_duration("crashes", v) for v in _list(key, value))
            elif key == "write_off":
                kw[key] = tuple(_window(v) for v in _list(key, value))
            elif key == "consumer_restarts":
                kw[key] = tuple(_restart(v) for v in _list(key, value))
            elif key in ("broker_write_off", "broker_down"):
                kw[key] = tuple(_broker_window(key, v) for v in _list(key, value))
            else:
                kw[key] = value
        kw.update(overrides)
        try:
            return cls(**kw)
        except TypeError as exc:
            raise ScenarioError(f"bad scenario: {exc}") from None

    @classmethod
    def load(cls, path: str | Path, **overrides) -> "Scenario":
        try:
            text = Path(path).read_text(encoding="utf-8")
        except OSError as exc:
            raise ScenarioError(f"cannot read scenario file {str(path)!r}: {exc.strerror}") from None
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ScenarioError(f"scenario file {str(path)!r} is not valid JSON: {exc.msg} at line {exc.lineno}") \
                from None
        return cls.from_dict(data, **overrides)

    def to_dict(self) -> dict:
        return asdict(self)

    def to_file_data(self) -> dict:
        """The scenario as a scenario file holds it (what ``from_dict`` and ``load`` read
        back equal), fields at their defaults left out: a shrunk failing case is short."""
        def changed(spec) -> dict:
            return {f.name: getattr(spec, f.name) for f in fields(spec) if getattr(spec, f.name) != f.default}

        def window(w: BrokerWindow) -> dict:
            return {"broker": w.broker, "start": w.start_ms, "end": w.end_ms}

        forms = {"topics": lambda v: [changed(t) for t in v], "producers": lambda v: [changed(p) for p in v],
                 "groups": lambda v: [changed(g) for g in v], "crashes_ms": list,
                 "write_off": lambda v: [[w.start_ms, w.end_ms] for w in v],
                 "consumer_restarts": lambda v: [{"group": r.group, "at": r.at_ms, "down": r.down_ms} for r in v],
                 "broker_write_off": lambda v: [window(w) for w in v], "broker_down": lambda v: [window(w) for w in v],
                 "faults": lambda v: [f.to_entry() for f in v]}
        out = {}
        for f in fields(self):
            value = getattr(self, f.name)
            if value != f.default or f.name == "seed":
                out[f.name.removesuffix("_ms")] = forms.get(f.name, lambda v: v)(value)
        return out

    def group(self, name: str) -> GroupSpec:
        return next(g for g in self.groups if g.name == name)


def w1_scenario(seed: int = 0, messages: int = 10_000, duration: str = "6h", *, crash_at: str | None = "30m",
                rate: float = 100.0) -> Scenario:
    """The peer benchmark's W1 failure pattern (1 % poison, 10 % fail once) on one
    concurrent group, plus a broker crash."""
    return Scenario(seed=seed, messages=messages, duration_ms=parse_duration(duration),
                    producers=(ProducerSpec(rate=rate),),
                    groups=(GroupSpec(poison_every=100, fail_once_every=10, fail_once_remainder=5),),
                    crashes_ms=(parse_duration(crash_at),) if crash_at else ())


# -- validation ---------------------------------------------------------------------------
def _sql_group(g: GroupSpec) -> None:
    from rocketmq_emulator.broker.rocketmq_model.sql_filter import SqlFilterError, compile_sql

    if not isinstance(g.sql, str):
        raise ScenarioError(f"group {g.name}: sql is a SQL92 selector string, got {g.sql!r}")
    if g.protocol == "pulsar":
        raise ScenarioError(f"group {g.name}: sql (a SQL92 selector) is for 4.x and 5.x groups; this group is "
                            f"Pulsar")
    try:
        compile_sql(g.sql)
    except SqlFilterError as exc:
        raise ScenarioError(f"group {g.name}: sql: {exc}") from None


def _validate(s: Scenario) -> None:
    _int("seed", s.seed, lo=0)
    _int("messages", s.messages, lo=0)
    # the run's time is a virtual clock's, which stops where a broker's does (cluster.CLOCK_MAX_MS)
    from rocketmq_emulator.broker.cluster import CLOCK_MAX_MS

    span = CLOCK_MAX_MS - START_MS
    _int("duration", s.duration_ms, lo=1, hi=span)
    _int("settle", s.settle_ms, lo=0, hi=span - s.duration_ms)
    if not s.topics or not s.producers:
        raise ScenarioError("a scenario needs at least one topic and one producer")
    topic_names = [t.name for t in s.topics]
    if len(set(topic_names)) != len(topic_names):
        raise ScenarioError(f"topic names repeat: {topic_names}")
    for t in s.topics:
        _name("topic", t.name)
        _int(f"topic {t.name}: queues", t.queues, lo=1, hi=64)
    for p in s.producers:
        _known_topic(p.topic, topic_names, "producer")
        if not isinstance(p.rate, (int, float)) or isinstance(p.rate, bool) or not p.rate > 0:
            raise ScenarioError(f"producer rate must be a number > 0 messages per second, got {p.rate!r}")
        _int("producer body_size", p.body_size, lo=9, hi=4 * 1024 * 1024)
        _transactions(p)
    names = [g.name for g in s.groups]
    if len(set(names)) != len(names):
        raise ScenarioError(f"consumer group names repeat: {names}")
    for g in s.groups:
        _name("group", g.name)
        _known_topic(g.topic, topic_names, f"group {g.name}")
        _int(f"group {g.name}: consumers", g.consumers, lo=1, hi=16)
        _int(f"group {g.name}: batch_size", g.batch_size, lo=1, hi=32)
        _int(f"group {g.name}: max_reconsume_times", g.max_reconsume_times, lo=-1, hi=1000)
        _int(f"group {g.name}: consume_timeout_minutes", g.consume_timeout_minutes, lo=1, hi=24 * 60)
        _int(f"group {g.name}: poison_every", g.poison_every, lo=0)
        _int(f"group {g.name}: fail_once_every", g.fail_once_every, lo=0)
        _int(f"group {g.name}: fail_once_remainder", g.fail_once_remainder, lo=0)
        if g.protocol not in PROTOCOLS:
            raise ScenarioError(f"group {g.name}: protocol must be one of {', '.join(PROTOCOLS)}, got {g.protocol!r}")
        _int(f"group {g.name}: invisible_seconds", g.invisible_seconds, lo=1, hi=12 * 3600)
        for key, needs in _PROTOCOL_FIELDS.items():
            if g.protocol != needs and getattr(g, key) != _GROUP_DEFAULTS[key]:
                raise ScenarioError(f"group {g.name}: {key} is for {PROTOCOL_NAMES[needs]} groups (give it "
                                    f"\"protocol\": \"{needs}\"); this group is {g.protocol}")
        if g.protocol == "5.x" and g.orderly:
            raise ScenarioError(f"group {g.name}: 5.x FIFO groups are not simulated; use a 4.x orderly group "
                                f"or a 5.x concurrent one")
        if g.protocol == "pulsar":
            _pulsar_group(g, {t.name: t for t in s.topics}[g.topic])
        if g.sql:
            _sql_group(g)
            if any(p.transactional for p in s.producers):
                raise ScenarioError(f"group {g.name}: a SQL92 group with transactional producers is not "
                                    f"simulated (where a committed copy is stored is known only later)")
        for key in ("fail_probability", "slow_probability"):
            v = getattr(g, key)
            if not isinstance(v, (int, float)) or isinstance(v, bool) or not 0 <= v <= 1:
                raise ScenarioError(f"group {g.name}: {key} must be between 0 and 1, got {v!r}")
        if g.orderly and g.max_reconsume_times == -1 and (g.poison_every or g.fail_probability == 1):
            raise ScenarioError(f"group {g.name}: an orderly group retries forever by default; "
                                f"give it max_reconsume_times to let poison messages reach the DLQ")
    # A fault that starts after the duration would never happen (the run only settles
    # then): refused rather than silently left out. An end past it is fine.
    for t in s.crashes_ms:
        _int("crash time", t, lo=0)
        _within(s, t, f"a crash at {format_duration(t)} is")
    for w in s.write_off:
        if not 0 <= w.start_ms < w.end_ms:
            raise ScenarioError(f"write_off window must have 0 <= start < end, got {w.start_ms}..{w.end_ms} ms")
        _within(s, w.start_ms, f"a write_off window {format_duration(w.start_ms)}..{format_duration(w.end_ms)} starts")
    for r in s.consumer_restarts:
        if r.group not in names:
            raise ScenarioError(f"consumer restart names unknown group {r.group!r}")
        _int("consumer restart time", r.at_ms, lo=0)
        _int("consumer restart down time", r.down_ms, lo=0)
        _within(s, r.at_ms, f"a restart of group {r.group} at {format_duration(r.at_ms)} is")
    _cluster(s)
    _faults(s)
    if s.message_delay_level is not None:
        from rocketmq_emulator.store.config import DelayTableError, parse_delay_table
        try:
            parse_delay_table(s.message_delay_level)
        except DelayTableError as exc:
            raise ScenarioError(f"message_delay_level: {exc}") from None


_TRANSACTION_FIELDS = ("rollback_probability", "commit_at_check_probability", "never_answered_probability")


def _transactions(p: ProducerSpec) -> None:
    if not isinstance(p.transactional, bool):
        raise ScenarioError(f"producer transactional must be true or false, got {p.transactional!r}")
    for key in _TRANSACTION_FIELDS:
        v = getattr(p, key)
        if not isinstance(v, (int, float)) or isinstance(v, bool) or not 0 <= v <= 1:
            raise ScenarioError(f"producer {key} must be between 0 and 1, got {v!r}")
        if v and not p.transactional:
            raise ScenarioError(f"producer {key} is for transactional producers: give it \"transactional\": true")
    if sum(p.transaction_draws) > 1:
        raise ScenarioError(f"producer rollback, commit_at_check and never_answered probabilities add up to "
                            f"{sum(p.transaction_draws):g}; they may add up to 1 at most (the rest commit)")


def _cluster(s: Scenario) -> None:
    from rocketmq_emulator.broker.cluster import MAX_BROKERS, broker_names

    _int("brokers", s.brokers, lo=1, hi=MAX_BROKERS)
    names = broker_names(s.brokers)
    if s.brokers > 1:
        other = [g.name for g in s.groups if g.protocol != "4.x"]
        if other:
            raise ScenarioError(f"a cluster runs 4.x groups only (the 5.x and Pulsar fronts serve one broker); "
                                f"group {other[0]} is not 4.x")
    for key in ("broker_write_off", "broker_down"):
        for w in getattr(s, key):
            if w.broker not in names:
                raise ScenarioError(f"{key} names broker {w.broker!r}; the brokers are {', '.join(names)} "
                                    f"(give brokers N for more)")
            if not 0 <= w.start_ms < w.end_ms:
                raise ScenarioError(f"a {key} window must have 0 <= start < end, got {w.start_ms}..{w.end_ms} ms")
            _within(s, w.start_ms, f"a {key} of {w.broker} at {format_duration(w.start_ms)} is")
    if s.broker_down and s.brokers == 1:
        raise ScenarioError("broker_down needs a cluster: give brokers 2 or more (a lone broker's clients have "
                            "nowhere to go; a crash is what stops a lone broker)")
    downs = sorted(s.broker_down, key=lambda w: w.start_ms)
    for i, w in enumerate(downs):
        overlapping = {w.broker} | {o.broker for o in downs[:i] if o.end_ms > w.start_ms}
        if len(overlapping) == s.brokers:
            raise ScenarioError(f"at {format_duration(w.start_ms)} every broker would be down; "
                                f"keep at least one up")
    by_broker: dict[str, list[BrokerWindow]] = {}
    for w in downs:
        previous = by_broker.setdefault(w.broker, [])
        if previous and previous[-1].end_ms > w.start_ms:
            raise ScenarioError(f"two broker_down windows of {w.broker} overlap at {format_duration(w.start_ms)}")
        previous.append(w)


def _faults(s: Scenario) -> None:
    from rocketmq_emulator.broker.cluster import broker_names
    try:
        fault_rules.check_fault_specs(
            s.faults, duration_ms=s.duration_ms, brokers=tuple(broker_names(s.brokers)),
            groups={g.name: "pulsar-letters" if g.retry_letters else g.protocol for g in s.groups},
            topics=tuple(t.name for t in s.topics), producer_group=PRODUCER_GROUP,
            transactional=any(p.transactional for p in s.producers))
    except fault_rules._Invalid as exc:
        raise ScenarioError(str(exc)) from None


def _pulsar_group(g: GroupSpec, topic: TopicSpec) -> None:
    _int(f"group {g.name}: nack_delay_seconds", g.nack_delay_seconds, lo=1, hi=24 * 3600)
    _int(f"group {g.name}: ack_timeout_seconds", g.ack_timeout_seconds, lo=0, hi=24 * 3600)
    if g.orderly:
        raise ScenarioError(f"group {g.name}: Pulsar groups are simulated as Shared subscriptions; orderly is "
                            f"for 4.x groups")
    if topic.queues != 1:
        raise ScenarioError(f"group {g.name}: a Pulsar topic is one log; give topic {topic.name} 1 queue, "
                            f"not {topic.queues}")
    if g.max_reconsume_times == 0:
        raise ScenarioError(f"group {g.name}: a Pulsar max_redeliver_count must be at least 1 (the client's "
                            f"rule); give max_reconsume_times 1 or more")
    if 0 < g.ack_timeout_seconds < 10:
        raise ScenarioError(f"group {g.name}: ack_timeout_seconds must be 0 (off) or at least 10, as the "
                            f"Pulsar client requires; got {g.ack_timeout_seconds}")
    if g.retry_letters:
        _retry_letters(g, topic)
    elif g.slow_probability and not g.ack_timeout_seconds:
        raise ScenarioError(f"group {g.name}: slow deliveries of a Pulsar group come back only through an ack "
                            f"timeout; give ack_timeout_seconds (10 or more) or slow_probability 0")


RETRY_LETTER_MODES = ("increasing", "level", "delay")


def _retry_letters(g: GroupSpec, topic: TopicSpec) -> None:
    if g.retry_letters not in RETRY_LETTER_MODES:
        raise ScenarioError(f"group {g.name}: retry_letters must be one of {', '.join(RETRY_LETTER_MODES)} (or "
                            f"empty for negative acks), got {g.retry_letters!r}")
    if not topic.name.startswith(STORE_PREFIX) or topic.name.count("|") != 3:
        raise ScenarioError(f"group {g.name}: a retry-letter group reads a Pulsar topic; name topic {topic.name} "
                            f"pulsar|<tenant>|<namespace>|<name>, e.g. pulsar|public|default|{topic.name}")
    _int(f"group {g.name}: retry_level", g.retry_level, lo=1, hi=18)
    _int(f"group {g.name}: retry_delay_seconds", g.retry_delay_seconds, lo=1, hi=864_000)
    if g.slow_probability:
        raise ScenarioError(f"group {g.name}: a retry-letter group's deliveries are answered; give "
                            f"slow_probability 0")
    from rocketmq_emulator.broker.cli.common import missing_extra
    missing = missing_extra("pulsar", "google.protobuf", "google_crc32c")
    if missing:
        raise ScenarioError(f"group {g.name}: a retry-letter group runs the SDK's Pulsar client, which {missing}")


def _within(s: Scenario, at_ms: int, what: str) -> None:
    if at_ms > s.duration_ms:
        raise ScenarioError(f"{what} after the end of the run (duration {format_duration(s.duration_ms)}), so it "
                            f"would never happen; move it to {format_duration(s.duration_ms)} or earlier, "
                            f"or run longer")


def _int(what: str, v, lo: int | None = None, hi: int | None = None) -> None:
    if not isinstance(v, int) or isinstance(v, bool):
        raise ScenarioError(f"{what} must be an integer, got {v!r}")
    if lo is not None and v < lo:
        raise ScenarioError(f"{what} must be >= {lo}, got {v}")
    if hi is not None and v > hi:
        raise ScenarioError(f"{what} must be <= {hi}, got {v}")


def _name(what: str, name) -> None:
    from rocketmq_emulator.broker.rocketmq_model.topics import TopicNameError, validate_topic_name
    if not isinstance(name, str):
        raise ScenarioError(f"{what} name must be a string, got {name!r}")
    try:
        validate_topic_name(name)
    except TopicNameError as exc:
        raise ScenarioError(f"{what} name {name!r}: {exc}") from None


def _known_topic(topic: str, names: list[str], who: str) -> None:
    if topic not in names:
        raise ScenarioError(f"{who} uses topic {topic!r}, which the scenario does not declare (topics: {names})")


def _no_unknown(what: str, data: dict, cls) -> None:
    allowed = {f.name for f in fields(cls)}
    if cls is Scenario:
        allowed |= {"duration", "settle", "crashes"}
        allowed -= {"duration_ms", "settle_ms", "crashes_ms"}
    unknown = sorted(set(data) - allowed)
    if unknown:
        raise ScenarioError(f"unknown {what} option(s) {', '.join(unknown)}; known: {', '.join(sorted(allowed))}")


def _build(cls, what: str, data):
    if not isinstance(data, dict):
        raise ScenarioError(f"each {what} is a JSON object, got {data!r}")
    _no_unknown(what, data, cls)
    return cls(**data)


def _list(key: str, value) -> list:
    if not isinstance(value, list):
        raise ScenarioError(f"{key} must be a list, got {value!r}")
    return value


def _duration(key: str, value) -> int:
    if isinstance(value, bool):
        raise ScenarioError(f"{key}: a duration is like '90s' or '6h', got {value!r}")
    if isinstance(value, int):
        if value < 0:
            raise ScenarioError(f"{key}: a duration cannot be negative, got {value}")
        return value
    if not isinstance(value, str):
        raise ScenarioError(f"{key}: a duration is like '90s' or '6h', got {value!r}")
    try:
        return parse_duration(value)
    except DelayLevelError as exc:
        raise ScenarioError(f"{key}: {exc}") from None


def _window(v) -> WriteOffWindow:
    if isinstance(v, dict):
        _no_unknown("write_off window", v, _WindowKeys)
        return WriteOffWindow(_duration("write_off start", v.get("start", 0)), _duration("write_off end", v.get("end", 0)))
    if isinstance(v, list) and len(v) == 2:
        return WriteOffWindow(_duration("write_off start", v[0]), _duration("write_off end", v[1]))
    raise ScenarioError(f"a write_off window is [start, end] or {{start, end}}, got {v!r}")


def _restart(v) -> ConsumerRestart:
    if not isinstance(v, dict):
        raise ScenarioError(f"a consumer restart is {{group, at, down}}, got {v!r}")
    _no_unknown("consumer restart", v, _RestartKeys)
    if "group" not in v or "at" not in v:
        raise ScenarioError("a consumer restart needs group and at")
    return ConsumerRestart(v["group"], _duration("consumer restart at", v["at"]),
                           _duration("consumer restart down", v.get("down", 30_000)))


def _broker_window(key: str, v) -> BrokerWindow:
    if isinstance(v, str):
        return parse_broker_window(v, "--" + key.replace("_", "-"))
    if not isinstance(v, dict):
        raise ScenarioError(f"a {key} entry is {{broker, start, end}} or \"NAME@START..END\", got {v!r}")
    _no_unknown(f"{key} entry", v, _BrokerWindowKeys)
    if "broker" not in v or "start" not in v or "end" not in v:
        raise ScenarioError(f"a {key} entry needs broker, start and end")
    return BrokerWindow(v["broker"], _duration(f"{key} start", v["start"]), _duration(f"{key} end", v["end"]))


@dataclass
class _BrokerWindowKeys:
    broker: Any = None
    start: Any = None
    end: Any = None


@dataclass
class _WindowKeys:
    start: Any = None
    end: Any = None


@dataclass
class _RestartKeys:
    group: Any = None
    at: Any = None
    down: Any = None


def parse_window(text: str) -> WriteOffWindow:
    """``START..END`` as the CLI takes it (``10m..12m``)."""
    start, sep, end = text.partition("..")
    if not sep:
        raise ScenarioError(f"--write-off takes START..END (like 10m..12m), got {text!r}")
    return WriteOffWindow(_duration("--write-off", start), _duration("--write-off", end))


def parse_restart(text: str) -> ConsumerRestart:
    """``GROUP@AT[+DOWN]`` as the CLI takes it (``SimGroup@20m+1m``)."""
    group, sep, rest = text.partition("@")
    if not sep or not group:
        raise ScenarioError(f"--restart-consumer takes GROUP@AT[+DOWN] (like SimGroup@20m+1m), got {text!r}")
    at, _, down = rest.partition("+")
    return ConsumerRestart(group, _duration("--restart-consumer", at),
                           _duration("--restart-consumer", down) if down else 30_000)


def parse_broker_window(text: str, option: str) -> BrokerWindow:
    """``NAME@START..END`` (``--broker-write-off broker-a@10m..20m``) or ``NAME@AT+DOWN``
    (``--broker-down broker-b@30m+5m``)."""
    name, sep, rest = text.partition("@")
    start, dots, end = rest.partition("..")
    at, plus, down = rest.partition("+")
    if not sep or not name or not (dots or plus):
        raise ScenarioError(f"{option} takes NAME@START..END or NAME@AT+DOWN (like broker-a@10m..20m or "
                            f"broker-b@30m+5m), got {text!r}")
    if dots:
        return BrokerWindow(name, _duration(option, start), _duration(option, end))
    begin = _duration(option, at)
    return BrokerWindow(name, begin, begin + _duration(option, down))


__all__ += ["parse_window", "parse_restart", "parse_broker_window", "BrokerWindow"]
