"""The one definition of what a run produced, and what became of it.

Pure Python, in the store's package: the simulator (client_sdk) uses it to print
``simulate --json``, and spark_analytics' ``jobs.py`` implements the same rules in
Spark; a test checks both give the same numbers on the same store.

Every stored record is one of these kinds (``classify``):

  original          a business-topic record, first store: *produced*, deliverable (attempt 0)
  delayed_original  a business message sent with DELAY, parked in SCHEDULE_TOPIC_XXXX
                    (REAL_TOPIC = its business topic): *produced*, not yet deliverable
  delayed_delivery  its copy re-stored in the business topic when due (REAL_TOPIC equals
                    the record's own topic — upstream keeps that property): deliverable
                    (attempt 0), not produced again
  retry_scheduled   a send-back parked in SCHEDULE_TOPIC_XXXX with REAL_TOPIC %RETRY%<group>
  retry_delivery    its copy re-stored in %RETRY%<group> when due: deliverable to the group
                    at attempt = its reconsumeTimes
  retry_direct      stored straight into %RETRY%<group> without a delay: a send-back
                    and deliverable. 5.x redeliveries are of this kind too: a delivery
                    whose invisible time ended is re-stored in %RETRY%<group>+<topic>
                    (the pop retry topic; the group is the name before the "+"); and a
                    Pulsar client's retry letter (``reconsume_later``): a record in a
                    topic named ``…-RETRY`` whose REAL_TOPIC is another topic, its
                    reconsumeTimes its RECONSUMETIMES, its group the subscription its
                    name holds (``pulsar_letter_group``)
  dead_letter       stored in %DLQ%<group>: a send-back and a dead letter. A Pulsar
                    client's dead letter is of this kind too: a record in a topic named
                    ``…-DLQ`` whose REAL_TOPIC is another topic (the Pulsar front writes
                    REAL_TOPIC and ORIGIN_MESSAGE_ID in the store's terms: the original's
                    store topic and offsetMsgId). Its group is the subscription its
                    name holds (``pulsar_letter_group``)
  other             system topics, prepared / rolled-back transaction halves, and every
                    chunk of a Pulsar chunked message but its last (PULSAR_CHUNK "<i>/<n>"
                    with i < n - 1): a chunked message is one message, the record of its
                    last chunk (the client's id for it names that chunk)

A *message* is one stored original (or delayed delivery): its key is that record's
offsetMsgId. A copy finds its message through ORIGIN_MESSAGE_ID — the first copy's
offsetMsgId, which the broker's send-back writes once and keeps — or, for the client's
fallback send-back that carries a client msgId instead, through UNIQ_KEY (the original
with that UNIQ_KEY at the lowest commit-log offset). A copy whose message is not in the
snapshot keeps a key of its own ("?" + its id) and its RETRY_TOPIC as topic.

A group consumes a business topic T when the consumer offset table has T@group, or when
the group has copies of T's messages. A deliverable copy is *consumed* when the group's
committed offset for its queue (T@group, or %RETRY%group@group) is above its queue
offset. A send-back of attempt k has reconsumeTimes k + 1.

The four counts (over the snapshot; per group and topic in ``GroupTopicCounts``):

  produced       originals + delayed originals in business topics (per topic, not per
                 group: a message consumed by two groups is produced once)
  succeeded      per (group, message) without a dead_letter copy: some consumed deliverable
                 copy of attempt k has no send-back of attempt k + 1; summed over groups
  dead_lettered  per (group, message): a dead_letter copy exists; summed over groups.
                 A dead letter is not also a success: an orderly consumer (and a 5.x FIFO
                 one) retries in place and commits past the original once it moved it to
                 the DLQ, and a 5.x DLQ copy's reconsumeTimes is one above 4.x's
  send_backs     send-back records stored (retry_scheduled + retry_direct + dead_letter),
                 all groups — each is one CONSUMER_SEND_MSG_BACK (or its client fallback)
                 that stored something, the DLQ moves included

So for one group with everything settled: produced = succeeded + dead_lettered, and
send_backs = retries + dead_lettered.
"""
from __future__ import annotations

from collections import defaultdict
from dataclasses import asdict, dataclass, field
from enum import Enum
from typing import Callable, Iterable, Mapping

from .record_view import RecordHead, prop_value
from .records import DLQ_PREFIX, POP_RETRY_SEPARATOR, RETRY_PREFIX, SCHEDULE_TOPIC, SYSTEM_PREFIXES, SYSTEM_TOPICS, Prop

__all__ = [
    "NOT_BUSINESS_PREFIXES",
    "Kind",
    "is_business_topic",
    "classify",
    "group_of",
    "normalize_offsets",
    "GroupTopicCounts",
    "Accounts",
    "account",
    "account_brokers",
    "account_message_stores",
    "account_message_store",
    "Ledger",
    "ledger_accounts",
    "subscriptions_of",
    "pulsar_letter_group",
    "redelivery_stats",
    "PULSAR_DLQ_SUFFIX",
    "PULSAR_RETRY_SUFFIX",
    "PULSAR_CHUNK_PROPERTY",
    "is_partial_chunk",
]

# Seed 000: a subscription's letter topics are "<topic>-<subscription>-RETRY" / "-DLQ"
PULSAR_DLQ_SUFFIX = "-DLQ"
PULSAR_RETRY_SUFFIX = "-RETRY"
# Each chunk of a Pulsar chunked message is a record with this property, "<chunk id>/<chunks>"
PULSAR_CHUNK_PROPERTY = "PULSAR_CHUNK"
_CHUNK_KEY = PULSAR_CHUNK_PROPERTY + "\x01"


def is_partial_chunk(value: str | None) -> bool:
    """Whether a PULSAR_CHUNK value names a chunk before the last of its message."""
    if not value:
        return False
    i, _, n = value.partition("/")
    return i.isdigit() and n.isdigit() and int(i) < int(n) - 1

# Not a business topic: a system one, or a group's retry / dead-letter topic.
NOT_BUSINESS_PREFIXES = (RETRY_PREFIX, DLQ_PREFIX) + SYSTEM_PREFIXES
_TX_MASK, _TX_PREPARED, _TX_ROLLBACK = 0xC, 0x4, 0xC
_TX_HALVES = (_TX_PREPARED, _TX_ROLLBACK)
_ORIGIN, _REAL_TOPIC = Prop.ORIGIN_MESSAGE_ID, Prop.REAL_TOPIC


class Kind(str, Enum):
    ORIGINAL = "original"
    DELAYED_ORIGINAL = "delayed_original"
    DELAYED_DELIVERY = "delayed_delivery"
    RETRY_SCHEDULED = "retry_scheduled"
    RETRY_DELIVERY = "retry_delivery"
    RETRY_DIRECT = "retry_direct"
    DEAD_LETTER = "dead_letter"
    OTHER = "other"


# A member looked up on the Enum class costs about 0.1 µs (EnumType's attribute
# descriptor); the per-record code below uses these module names instead.
(_ORIGINAL, _DELAYED_ORIGINAL, _DELAYED_DELIVERY, _RETRY_SCHEDULED, _RETRY_DELIVERY, _RETRY_DIRECT, _DEAD_LETTER,
 _OTHER) = Kind
SEND_BACK_KINDS = frozenset({Kind.RETRY_SCHEDULED, Kind.RETRY_DIRECT, Kind.DEAD_LETTER})
RETRY_COPY_KINDS = frozenset({Kind.RETRY_DELIVERY, Kind.RETRY_DIRECT})      # deliverable in %RETRY%
_COPY_KINDS = SEND_BACK_KINDS | RETRY_COPY_KINDS


def is_business_topic(topic: str | None) -> bool:
    return bool(topic) and topic not in SYSTEM_TOPICS and not topic.startswith(NOT_BUSINESS_PREFIXES)


def classify(topic: str, props: Mapping[str, str], sys_flag: int = 0) -> Kind:
    """The kind of a stored record (see the module notes)."""
    if is_partial_chunk(props.get(PULSAR_CHUNK_PROPERTY)):
        return _OTHER
    return _kind(topic, props.get(Prop.REAL_TOPIC), sys_flag)


def _kind(topic: str, real: str | None, sys_flag: int) -> Kind:
    """``classify`` given the record's REAL_TOPIC property."""
    if sys_flag & _TX_MASK in (_TX_PREPARED, _TX_ROLLBACK):
        return _OTHER
    if topic == SCHEDULE_TOPIC:
        if real and real.startswith(RETRY_PREFIX):
            return _RETRY_SCHEDULED
        return _DELAYED_ORIGINAL if is_business_topic(real) else _OTHER
    if topic.startswith(RETRY_PREFIX):
        return _RETRY_DELIVERY if real == topic else _RETRY_DIRECT
    if topic.startswith(DLQ_PREFIX):
        return _DEAD_LETTER
    if is_business_topic(topic):
        if real and real != topic:
            if topic.endswith(PULSAR_DLQ_SUFFIX):
                return _DEAD_LETTER                 # a Pulsar client's dead letter
            if topic.endswith(PULSAR_RETRY_SUFFIX):
                return _RETRY_DIRECT                # a Pulsar client's retry letter
        return _DELAYED_DELIVERY if real == topic else _ORIGINAL
    return _OTHER


def pulsar_letter_group(topic: str, real: str | None) -> str:
    """The subscription (store group) a Pulsar dead or retry letter in ``topic`` belongs
    to, its original in the store topic ``real``: the Pulsar clients' default name is
    ``<topic>-<subscription>-DLQ`` (``-RETRY``), the older one ``<subscription>-DLQ`` in
    the same namespace; for any other name, the name before the suffix (a custom letter
    topic does not say its subscription)."""
    end = len(topic) - len(PULSAR_DLQ_SUFFIX if topic.endswith(PULSAR_DLQ_SUFFIX) else PULSAR_RETRY_SUFFIX)
    if real and topic.startswith(real + "-") and end > len(real) + 1:
        return topic[len(real) + 1:end]
    return topic[:end].rpartition("|")[2]


def redelivery_stats(subscriptions_doc: Mapping | None) -> list[dict]:
    """The Pulsar subscriptions' redelivery stats from config/subscriptions.json (the
    broker's subscriptions.STATS per ``topic@group``), one row per subscription."""
    rows = []
    for key, entry in sorted((subscriptions_doc or {}).items()):
        topic, sep, group = str(key).rpartition("@")
        stats = entry.get("stats") if isinstance(entry, Mapping) else None
        if sep and isinstance(stats, Mapping):
            rows.append({"group": group, "topic": topic, **{k: int(stats.get(k, 0)) for k in (
                "redeliveries", "redelivered_messages", "max_redelivery_count")}})
    return rows


def group_of(kind: Kind, topic: str, props: Mapping[str, str]) -> str | None:
    """The consumer group a retry / dead-letter record belongs to."""
    return _group(kind, topic, props.get(Prop.REAL_TOPIC))


def _group(kind: Kind, topic: str, real: str | None) -> str | None:
    if kind is _RETRY_SCHEDULED:
        return (real or "")[len(RETRY_PREFIX):]
    if kind in RETRY_COPY_KINDS:
        if not topic.startswith(RETRY_PREFIX):
            return pulsar_letter_group(topic, real)
        return topic[len(RETRY_PREFIX):].partition(POP_RETRY_SEPARATOR)[0]
    if kind is _DEAD_LETTER:
        return topic[len(DLQ_PREFIX):] if topic.startswith(DLQ_PREFIX) else pulsar_letter_group(topic, real)
    return None


def normalize_offsets(table: Mapping) -> dict[tuple[str, str], dict[int, int]]:
    """consumerOffset.json's ``{"offsetTable": {"topic@group": {"0": 12}}}`` (or the
    inner table, or MessageStore.offset_table()) → {(topic, group): {qid: offset}}."""
    if "offsetTable" in table and isinstance(table.get("offsetTable"), Mapping):
        table = table["offsetTable"]
    out: dict[tuple[str, str], dict[int, int]] = {}
    for key, queues in table.items():
        topic, sep, group = str(key).rpartition("@")
        if not sep:
            continue
        out[(topic, group)] = {int(q): int(o) for q, o in queues.items()}
    return out


@dataclass(frozen=True, slots=True)
class GroupTopicCounts:
    group: str
    topic: str
    produced: int
    succeeded: int
    dead_lettered: int
    send_backs: int
    retried: dict[int, int] = field(default_factory=dict)    # n retries -> messages

    @property
    def in_flight(self) -> int:
        return self.produced - self.succeeded - self.dead_lettered


@dataclass(frozen=True, slots=True)
class Accounts:
    produced: int
    succeeded: int
    dead_lettered: int
    send_backs: int
    per_group: tuple[GroupTopicCounts, ...] = ()
    produced_by_topic: dict[str, int] = field(default_factory=dict)
    redeliveries: tuple[dict, ...] = ()            # Pulsar subscriptions' stats (redelivery_stats)

    def summary(self) -> dict:
        """The four counts, as summary.json and ``simulate --json`` print them."""
        return {"produced": self.produced, "succeeded": self.succeeded,
                "dead_lettered": self.dead_lettered, "send_backs": self.send_backs}

    def to_dict(self) -> dict:
        d = self.summary()
        d["per_group"] = [dict(asdict(g), retried={str(k): v for k, v in sorted(g.retried.items())})
                          for g in self.per_group]
        d["produced_by_topic"] = dict(self.produced_by_topic)
        d["redeliveries"] = [dict(r) for r in self.redeliveries]
        return d


class _TextProps:
    """The two Mapping methods ``account`` uses, over an unparsed properties string
    (``store.record_view.RecordHead``): a few values are read of each record, so
    looking them up beats parsing the whole map."""

    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text

    def get(self, key: str, default=None):
        value = prop_value(self.text, key)
        return default if value is None else value

    def __getitem__(self, key: str) -> str:
        value = prop_value(self.text, key)
        if value is None:
            raise KeyError(key)
        return value


_REAL_TOPIC_KEY = Prop.REAL_TOPIC + "\x01"     # (prop_value finds nothing without it)


def account(records: Iterable, offset_table: Mapping, subscriptions_doc: Mapping | None = None) -> Accounts:
    """The counts for records and a consumer offset table (and the Pulsar subscriptions'
    redelivery stats of config/subscriptions.json, which no record holds). A record is a
    ``store.record_view.RecordHead`` or anything with topic, properties (a mapping),
    sys_flag, queue_id, queue_offset, reconsume_times, commit_log_offset and
    offset_msg_id (``store.records.MessageRecord``).

    One pass, in log order, keeping per message a few small values and nothing of the
    records: a copy is resolved to its message when met, since its message (an
    original, or the delayed delivery) is always stored before it (a send-back follows
    a delivery, and ORIGIN_MESSAGE_ID / the fallback's UNIQ_KEY name that earlier
    record). Memory: O(messages); a 10,000-message ladder of 340,000 records used to
    hold every copy's head until the end."""
    return _account([(lambda: records, offset_table)], subscriptions_doc)


def account_brokers(brokers: list[tuple[Callable[[], Iterable], Mapping]],
                    subscriptions_doc: Mapping | None = None) -> Accounts:
    """``account`` over a cluster: one (records, offset table) per broker, ``records`` a
    function that iterates that broker's records (called twice). A copy may sit on
    another broker than its message (a client's fallback send-back goes wherever its
    producer finds a writable queue), so every broker's messages are read first and the
    copies after; committed offsets are each broker's own (queue ids repeat across
    brokers)."""
    return _account(brokers, subscriptions_doc)


_MESSAGE_KINDS = frozenset({Kind.ORIGINAL, Kind.DELAYED_DELIVERY, Kind.DELAYED_ORIGINAL})


def _account(parts: list[tuple[Callable[[], Iterable], Mapping]], subscriptions_doc: Mapping | None) -> Accounts:
    offsets_of = [normalize_offsets(table) for _, table in parts]
    ledger = Ledger(offsets_of)
    record = ledger.record
    # one broker: one pass; several: their messages first, then their copies
    passes = [None] if len(parts) == 1 else [True, False]
    for messages_only in passes:
        for part, (records, _) in enumerate(parts):
            for rec in records():
                # a RecordHead's properties are looked up one by one, not parsed (most records
                # need one or two values); most records (the originals) have no REAL_TOPIC at all
                if rec.__class__ is RecordHead:
                    text = rec.properties_text
                    props = _TextProps(text)
                    real = prop_value(text, Prop.REAL_TOPIC) if _REAL_TOPIC_KEY in text else None
                    chunk = prop_value(text, PULSAR_CHUNK_PROPERTY) if _CHUNK_KEY in text else None
                else:
                    props = rec.properties
                    real = props.get(Prop.REAL_TOPIC)
                    chunk = props.get(PULSAR_CHUNK_PROPERTY)
                kind = _OTHER if chunk is not None and is_partial_chunk(chunk) else _kind(rec.topic, real, rec.sys_flag)
                if messages_only is not None and (kind in _MESSAGE_KINDS) is not messages_only:
                    continue
                record(kind, rec.topic, real, props, rec.queue_id, rec.queue_offset, rec.reconsume_times,
                       rec.offset_msg_id, part)
    return ledger.accounts(offsets_of, subscriptions_doc)


class Ledger:
    """The books the counts are computed from, kept record by record: by a walk of the
    log (``account``), or as each record is stored (``stored``: the simulator is told of
    every put and so never walks the log at the end). Then ``accounts`` of the final
    consumer offsets (as often as wanted): the same counts either way, one definition.

    With the offsets known from the start (a walk) a retry copy is checked against them
    when met; without (a live ledger) its few values are kept until ``accounts``."""

    def __init__(self, offsets_of: list[dict] | None = None) -> None:
        self._offsets_of = offsets_of
        self.by_offset_id: dict[str, tuple[str, str]] = {}      # offsetMsgId -> (key, topic)
        self.by_uniq: dict[str, tuple[str, str]] = {}           # UNIQ_KEY -> (key, topic) of its first original
        self.produced: dict[str, int] = defaultdict(int)
        self.originals: list[tuple[str, str, int, int, int]] = []  # (key, topic, qid, qoff, part)
        self.copy_pairs: set[tuple[str, str]] = set()          # (message topic, group) of every copy
        self.consumed_ok: dict[tuple[str, str], set[int]] = defaultdict(set)   # (group, key) -> consumed attempts
        self.send_backs: dict[tuple[str, str], set[int]] = defaultdict(set)    # (group, key) -> send-back attempts
        self.retries: dict[tuple[str, str], set[int]] = defaultdict(set)
        self.dead: set[tuple[str, str]] = set()
        self.topic_of: dict[tuple[str, str], str] = {}
        self.sb_records: dict[tuple[str, str], int] = defaultdict(int)         # (group, topic) -> records
        self.retry_copies: list[tuple] = []     # (gk, attempt, topic, group, qid, qoff, part), checked at the end
        self._kinds: dict[tuple[str, str | None], tuple[Kind, str | None]] = {}    # (topic, REAL_TOPIC) -> kind, group

    def _resolve(self, props, msg_id: str) -> tuple[str, str]:
        origin = props.get(Prop.ORIGIN_MESSAGE_ID)
        if origin:
            found = self.by_offset_id.get(origin)
            if found is not None:
                return found
        uniq = props.get(Prop.UNIQ_KEY)
        by_uniq = self.by_uniq
        for k in (origin, uniq):
            if k and k in by_uniq:
                return by_uniq[k]
        return "?" + (origin or uniq or msg_id), props.get(Prop.RETRY_TOPIC, "")

    def record(self, kind: Kind, topic: str, real: str | None, props, queue_id: int, queue_offset: int,
               reconsume_times: int, msg_id: str, part: int = 0, group: str | None = None) -> None:
        """One stored record: its kind (``classify``), topic, REAL_TOPIC, properties (a
        mapping: ``get``), queue id and offset, reconsume times, offsetMsgId, and the
        broker it is on (``part``: the index of its offset table); ``group``, the group
        of a copy, when the caller knows it (``_group``)."""
        if kind is _ORIGINAL or kind is _DELAYED_DELIVERY:          # a message: keys point at it
            if kind is _ORIGINAL:
                self.produced[topic] += 1
            self.by_offset_id[msg_id] = (msg_id, topic)
            uniq = props.get(Prop.UNIQ_KEY)
            if uniq and uniq not in self.by_uniq:       # the first one in log order: the lowest offset
                self.by_uniq[uniq] = (msg_id, topic)
            self.originals.append((msg_id, topic, queue_id, queue_offset, part))
        elif kind is _DELAYED_ORIGINAL:
            self.produced[real] += 1
        elif kind is not _OTHER:                                      # SEND_BACK_ or RETRY_COPY_KINDS
            if group is None:
                group = _group(kind, topic, real)
            # (_resolve, inlined: every copy; ``in`` and ``[]`` rather than ``get``, a call fewer each)
            if props.__class__ is dict:
                origin = props[_ORIGIN] if _ORIGIN in props else None
            else:                       # (a _TextProps: ``get`` only)
                origin = props.get(_ORIGIN)
            by_offset_id = self.by_offset_id
            if origin and origin in by_offset_id:
                key, message_topic = by_offset_id[origin]
            else:
                key, message_topic = self._resolve(props, msg_id)
            gk = (group, key)
            self.topic_of[gk] = message_topic
            self.copy_pairs.add((message_topic, group))
            if kind in SEND_BACK_KINDS:
                self.send_backs[gk].add(reconsume_times)
                self.sb_records[(group, message_topic)] += 1
                if kind is _DEAD_LETTER:
                    self.dead.add(gk)
                else:
                    self.retries[gk].add(reconsume_times)
            if kind in RETRY_COPY_KINDS:
                offsets_of = self._offsets_of
                if offsets_of is None:
                    self.retry_copies.append((gk, reconsume_times, topic, group, queue_id, queue_offset, part))
                elif offsets_of[part].get((topic, group), {}).get(queue_id, -1) > queue_offset:
                    self.consumed_ok[gk].add(reconsume_times)

    def stored(self, rec, msg_id: str, props: Mapping | None = None, part: int = 0) -> None:
        """A record just stored (``rec`` with the fields the store filled, ``msg_id`` its
        offsetMsgId), read as a walk reads it: by its stored properties string, or by
        ``props``, its map as stored, when the caller has it. (Runs for every record a
        simulation stores: a record's kind and group are looked up by its topic and
        REAL_TOPIC, a run has few of those.)"""
        if props is None:
            text = rec.properties_text
            props = _TextProps(text)
            real = prop_value(text, Prop.REAL_TOPIC) if _REAL_TOPIC_KEY in text else None
            chunk = prop_value(text, PULSAR_CHUNK_PROPERTY) if _CHUNK_KEY in text else None
        else:
            real = props[_REAL_TOPIC] if _REAL_TOPIC in props else None
            chunk = props[PULSAR_CHUNK_PROPERTY] if PULSAR_CHUNK_PROPERTY in props else None
        topic = rec.topic
        # (a chunk before its message's last is no message: by its own property, not the
        # kind cache's topic and REAL_TOPIC)
        if rec.sys_flag & _TX_MASK in _TX_HALVES or (chunk is not None and is_partial_chunk(chunk)):
            kind, group = _OTHER, None
        else:
            kinds, pair = self._kinds, (topic, real)
            if pair in kinds:
                kind, group = kinds[pair]
            else:
                kind = _kind(topic, real, 0)
                group = _group(kind, topic, real) if kind in _COPY_KINDS else None
                kinds[pair] = kind, group
        self.record(kind, topic, real, props, rec.queue_id, rec.queue_offset, rec.reconsume_times, msg_id, part,
                    group)

    def accounts(self, offsets_of: list[dict], subscriptions_doc: Mapping | None = None) -> Accounts:
        """The counts, for each broker's final consumer offsets (``normalize_offsets``
        tables, in ``part`` order)."""
        if self.retry_copies:
            # (a live ledger: its copies are checked against these offsets, in a copy of the
            # books so that ``accounts`` may be asked again)
            consumed_ok: dict[tuple[str, str], set[int]] = defaultdict(set)
            for gk, attempts in self.consumed_ok.items():
                consumed_ok[gk] |= attempts
        else:                   # (a walk: checked as met; a copy would double the peak)
            consumed_ok = self.consumed_ok
        no_offsets: dict = {}
        for gk, attempt, topic, group, qid, qoff, part in self.retry_copies:     # (a copy of each retry)
            offsets = offsets_of[part]
            queue_offsets = offsets[(topic, group)] if (topic, group) in offsets else no_offsets
            if qid in queue_offsets and queue_offsets[qid] > qoff:
                consumed_ok[gk].add(attempt)
        send_backs, dead, topic_of = self.send_backs, self.dead, self.topic_of
        produced, sb_records = self.produced, self.sb_records
        subscribed = {(t, g) for offsets in offsets_of for (t, g) in offsets if is_business_topic(t)}
        subscribed |= self.copy_pairs
        # (topic, broker) -> [(group, that group's committed offsets of the topic there)]: one
        # look-up per original and group (this loop sees every message)
        groups_of_topic: dict[tuple[str, int], list[tuple[str, dict[int, int]]]] = defaultdict(list)
        for topic, group in subscribed:
            for part, offsets in enumerate(offsets_of):
                groups_of_topic[(topic, part)].append((group, offsets.get((topic, group), {})))
        # Attempt 0 consumed, per (group, message) -> the message's topic: kept apart from the
        # copies' attempts because it is nearly every message and, mostly, its only attempt.
        first_ok: dict[tuple[str, str], str] = {}
        for key, topic, qid, qoff, part in self.originals:
            for group, queue_offsets in groups_of_topic.get((topic, part), ()):
                if queue_offsets.get(qid, -1) > qoff:
                    first_ok[(group, key)] = topic

        succ: dict[tuple[str, str], int] = defaultdict(int)
        dl: dict[tuple[str, str], int] = defaultdict(int)
        hist: dict[tuple[str, str], dict[int, int]] = defaultdict(lambda: defaultdict(int))
        # succeeded: some consumed attempt a has no send-back of attempt a + 1
        for gk, topic in first_ok.items():
            if gk in dead:
                continue
            sb = send_backs.get(gk)
            if sb is None or 1 not in sb or any(a + 1 not in sb for a in consumed_ok.get(gk, ())):
                succ[(gk[0], topic)] += 1
        for gk, attempts in consumed_ok.items():
            if gk not in first_ok and gk not in dead:
                sb = send_backs.get(gk)
                if sb is None or any(a + 1 not in sb for a in attempts):
                    succ[(gk[0], topic_of[gk])] += 1
        for gk in dead:
            dl[(gk[0], topic_of[gk])] += 1
        for gk, r in self.retries.items():
            hist[(gk[0], topic_of[gk])][len(r)] += 1
        per = []
        for topic, group in sorted(subscribed, key=lambda tg: (tg[1], tg[0])):  # send-back pairs are in it
            gt = (group, topic)
            per.append(GroupTopicCounts(group, topic, produced.get(topic, 0), succ.get(gt, 0), dl.get(gt, 0),
                                        sb_records.get(gt, 0), dict(sorted(hist.get(gt, {}).items()))))
        return Accounts(
            produced=sum(produced.values()), succeeded=sum(succ.values()), dead_lettered=sum(dl.values()),
            send_backs=sum(sb_records.values()), per_group=tuple(per),
            produced_by_topic=dict(sorted(produced.items())),
            redeliveries=tuple(redelivery_stats(subscriptions_doc)))


def account_message_store(store) -> Accounts:
    """``account`` over an open ``store.MessageStore`` (on disk or in memory), through
    its public API only — what the simulator uses at the end of a run: the head of every
    record of its commit log, in one pass (``store.heads()``: as in ``account_store``,
    records no consume queue lists count too — transaction halves, as *other*), and the
    store's consumer offset table and subscriptions' stats."""
    return account(store.heads(), store.offset_table(), store.load_config("subscriptions"))


def account_message_stores(stores: list) -> Accounts:
    """``account_message_store`` over the stores of a cluster's brokers (account_brokers)."""
    if len(stores) == 1:
        return account_message_store(stores[0])
    return account_brokers([(store.heads, store.offset_table()) for store in stores], subscriptions_of(stores))


def subscriptions_of(stores: list) -> dict:
    """The Pulsar subscriptions' documents (config/subscriptions.json) of every store, as one."""
    if len(stores) == 1:
        return stores[0].load_config("subscriptions")
    subscriptions: dict = {}
    for store in stores:
        subscriptions.update(store.load_config("subscriptions") or {})
    return subscriptions


def ledger_accounts(ledger: Ledger, stores: list) -> Accounts:
    """What ``account_message_stores(stores)`` gives, from a ``Ledger`` told of every
    record those stores hold (part = the store's index) and their offsets now."""
    return ledger.accounts([normalize_offsets(store.offset_table()) for store in stores], subscriptions_of(stores))
