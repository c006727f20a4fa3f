"""A group's dead letters, and re-driving them to their topic (sans-I/O, on a core).

Listing reads ``%DLQ%<group>`` (every queue) as stored, and a Pulsar subscription's
dead-letter topics (``<topic>-<subscription>-DLQ`` or the older ``<subscription>-DLQ``,
whose copies the Pulsar clients write): each dead letter's message id (UNIQ_KEY: what
the producer, consumers and `message send` show) and its DLQ record's offsetMsgId, keys,
tags, original topic (RETRY_TOPIC, which the broker's send-back writes; REAL_TOPIC for a
Pulsar client's copy), attempts (its reconsumeTimes) and when it died (its store time).
A re-drive names a dead letter by either id, as `message show` takes either
(MessageRecord.msg_id and offset_msg_id decide what they are); a message id names every
dead letter of that message (one per time it died).

The re-drive rule. A re-driven dead letter is stored in its original topic as a new
message: the same body, tags, keys and user properties, its ORIGIN_MESSAGE_ID kept
(the first copy's offsetMsgId, so it still names where it came from) and its UNIQ_KEY
kept (what the application saw as its id), a reconsume count of 0 (a fresh retry
budget), none of the retry machinery's properties (DELAY, RETRY_TOPIC, REAL_TOPIC,
REAL_QID, MAX_RECONSUME_TIMES; of a Pulsar copy also RECONSUMETIMES, DELAY_TIME and the
Pulsar front's bookkeeping — the client's metadata, its DLQ producer's name and sequence
id —, so Pulsar consumers get it as a new message with a redelivery count of 0:
user_properties.py), and REDRIVEN_FROM = the dead letter's id. The DLQ
entry stays where it is (a commit log is append-only) and is marked re-driven in
``config/redriven.json`` before the call returns, so a second re-drive, also after a
restart, sends nothing twice. Calls on a core are serialised by its driver, so two
re-drives at once cannot both send one dead letter.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field

from rocketmq_emulator.store.accounting import PULSAR_DLQ_SUFFIX, pulsar_letter_group
from rocketmq_emulator.store.records import DLQ_PREFIX, Prop

from ..operations import SendOutcome, SendRequest
from ..pulsar_model.names import shown_topic
from ..user_properties import user_properties

__all__ = ["DeadLetter", "RedriveResult", "DeadLetterError", "dead_letters", "dead_letter_counts", "dead_letter_page",
           "redrive",
           "REDRIVEN_FROM", "redriven_marks",
           "REDRIVE_PRODUCER_GROUP", "redrive_on"]

REDRIVEN_FROM = "REDRIVEN_FROM"
REDRIVE_PRODUCER_GROUP = "rocketmq-emulator-redrive"
_CONFIG = "redriven"                    # config/redriven.json: {group: {dead letter id: new message id}}
# What a Pulsar client's dead-letter copy carries of its retries: not re-driven.
_PULSAR_RETRY_PROPERTIES = frozenset({"RECONSUMETIMES", "DELAY_TIME"})


class DeadLetterError(ValueError):
    """A request about dead letters that cannot be done: one readable line."""


@dataclass(frozen=True)
class DeadLetter:
    msg_id: str                     # the message id (UNIQ_KEY; the offsetMsgId when it has none)
    offset_msg_id: str              # the DLQ record's offsetMsgId: this dead letter alone
    keys: str | None
    tags: str | None
    original_topic: str | None      # as its users name it (a Pulsar topic: persistent://...)
    attempts: int                   # its reconsumeTimes: the failed deliveries before it died
    died_at_ms: int
    origin_message_id: str | None
    body_size: int
    redriven_as: str | None         # the new message's id once re-driven

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class RedriveResult:
    sent: tuple[tuple[str, str], ...]        # (dead letter's offsetMsgId, the new message's offsetMsgId)
    already: tuple[str, ...]                 # re-driven before: nothing sent
    dry_run: bool = False
    # each dead letter's message id (sent or already), by its offsetMsgId: what `dlq list` shows first
    msg_ids: dict[str, str] = field(default_factory=dict, compare=False)

    def to_dict(self) -> dict:
        """Each dead letter by its offsetMsgId (``id``) and its message id (``msg_id``); a
        sent one with its new message's offsetMsgId (``new_id``; "" in a dry run)."""
        return {"sent": [{"msg_id": self.msg_ids.get(d, d), "id": d, "new_id": n} for d, n in self.sent],
                "already": [{"msg_id": self.msg_ids.get(d, d), "id": d} for d in self.already],
                "dry_run": self.dry_run}


def _not_dead_letters(group: str, ids: list[str], where: str = "") -> DeadLetterError:
    return DeadLetterError(f"not a dead letter of {group}{where}: {', '.join(ids[:5])}"
                           + (f" and {len(ids) - 5} more" if len(ids) > 5 else "")
                           + " (give the message id or the offsetMsgId `dlq list` shows)")


def _named(records: dict, wanted: str) -> list[str]:
    """The offsetMsgIds of the dead letters ``wanted`` names: one by its offsetMsgId (any
    case, as hex), or every one of a message by its message id."""
    if wanted.upper() in records:
        return [wanted.upper()]
    return [key for key, rec in records.items() if rec.msg_id == wanted]


def redriven_marks(core) -> dict[str, dict[str, str]]:
    """{group: {dead letter id: the re-driven message's id}} of this broker (saved)."""
    return _marks(core)


def _marks(core) -> dict:
    doc = core.store.load_config(_CONFIG)
    return doc if isinstance(doc, dict) else {}


def dead_letter_counts(core) -> dict[str, int]:
    """group -> how many dead letters it has on this broker (%DLQ%<group> and its Pulsar
    dead-letter topics), in one pass over the topics: a Pulsar dead-letter topic's first
    record says whose it is."""
    store = core.store
    queues = store.queues()
    out: dict[str, int] = {}
    for topic, qids in queues.items():
        if topic.startswith(DLQ_PREFIX):
            group = topic[len(DLQ_PREFIX):]
        elif topic.endswith(PULSAR_DLQ_SUFFIX):
            first = next(_read(store, topic, qids), None)
            real = first.properties.get(Prop.REAL_TOPIC) if first is not None else None
            if not real:
                continue
            group = pulsar_letter_group(topic, real)
        else:
            continue
        n = sum(max(store.max_offset(topic, q) - store.min_offset(topic, q), 0) for q in qids)
        if n:
            out[group] = out.get(group, 0) + n
    return out


def _dead_letter_topics(core, group: str) -> list[str]:
    """%DLQ%<group>, and the Pulsar dead-letter topics whose copies belong to ``group``."""
    store = core.store
    topics = [DLQ_PREFIX + group]
    for topic, qids in sorted(store.queues().items()):
        if topic.endswith(PULSAR_DLQ_SUFFIX) and not topic.startswith(DLQ_PREFIX):
            first = next(_read(store, topic, qids), None)
            if first is not None and first.properties.get(Prop.REAL_TOPIC) and \
                    pulsar_letter_group(topic, first.properties[Prop.REAL_TOPIC]) == group:
                topics.append(topic)
    return topics


def _read(store, topic: str, qids):
    for qid in sorted(qids):
        for off in range(store.min_offset(topic, qid), store.max_offset(topic, qid)):
            rec = store.record_at(topic, qid, off)
            if rec is not None:
                yield rec


def _records(core, group: str):
    queues = core.store.queues()
    for topic in _dead_letter_topics(core, group):
        yield from _read(core.store, topic, queues.get(topic, []))


def _original_topic(rec) -> str | None:
    """The broker's send-back writes RETRY_TOPIC (4.x, 5.x); a Pulsar client's copy has
    REAL_TOPIC in the store's terms (its RETRY_TOPIC is the client's retry-letter URL)."""
    if rec.topic.startswith(DLQ_PREFIX):
        return rec.properties.get(Prop.RETRY_TOPIC) or rec.properties.get(Prop.REAL_TOPIC)
    return rec.properties.get(Prop.REAL_TOPIC)


def _shown(topic: str | None) -> str | None:
    return shown_topic(topic) if topic else topic


def dead_letters(core, group: str) -> list[DeadLetter]:
    """The dead letters of ``group`` on this broker, oldest first ([] when it has none)."""
    marks = _marks(core).get(group, {})
    return [_dead_letter(rec, marks) for rec in _records(core, group)]


def _dead_letter(rec, marks: dict) -> DeadLetter:
    p = rec.properties
    return DeadLetter(rec.msg_id, rec.offset_msg_id, p.get(Prop.KEYS), p.get(Prop.TAGS),
                      _shown(_original_topic(rec)), rec.reconsume_times, rec.store_timestamp,
                      p.get(Prop.ORIGIN_MESSAGE_ID), len(rec.body), marks.get(rec.offset_msg_id))


def dead_letter_page(core, group: str, start: int = 0, limit: int = 50) -> tuple[list[DeadLetter], int]:
    """(a page of ``group``'s dead letters on this broker, newest first; how many it has),
    reading only the records of the page."""
    store = core.store
    queues = store.queues()
    spans = [(topic, qid, store.min_offset(topic, qid), store.max_offset(topic, qid))
             for topic in _dead_letter_topics(core, group) for qid in sorted(queues.get(topic, []))]
    total = sum(max(hi - lo, 0) for _, _, lo, hi in spans)
    marks = _marks(core).get(group, {})
    out, skip = [], start
    for topic, qid, lo, hi in reversed(spans):
        for off in range(hi - 1, lo - 1, -1):
            if len(out) >= limit:
                return out, total
            if skip:
                skip -= 1
                continue
            rec = store.record_at(topic, qid, off)
            if rec is not None:
                out.append(_dead_letter(rec, marks))
    return out, total


def redrive(core, group: str, ids: list[str] | None = None, *, dry_run: bool = False) -> RedriveResult:
    """Re-drive ``group``'s dead letters (``ids``, or all when None) by the rule above.
    DeadLetterError: no dead letter for the group, an id that is not one of them, a
    dead letter without an original topic, or a topic that refuses the message (what
    was sent before that stays sent, and marked)."""
    records = {rec.offset_msg_id: rec for rec in _records(core, group)}
    if not records:
        raise DeadLetterError(f"group {group!r} has no dead letters here (no %DLQ%{group} messages)")
    if ids is not None:
        named = {i: _named(records, i) for i in ids}
        unknown = [i for i, found in named.items() if not found]
        if unknown:
            raise _not_dead_letters(group, unknown)
        wanted = list(dict.fromkeys(key for found in named.values() for key in found))
    else:
        wanted = list(records)
    doc = _marks(core)
    marks = doc.setdefault(group, {})
    sent, already = [], []
    channel = core.connect()
    for msg_id in wanted:
        if msg_id in marks:
            already.append(msg_id)
            continue
        rec = records[msg_id]
        topic = _original_topic(rec)
        if not topic:
            raise DeadLetterError(f"dead letter {msg_id} names no original topic (no RETRY_TOPIC or REAL_TOPIC)")
        if dry_run:
            sent.append((msg_id, ""))
            continue
        props = {k: v for k, v in user_properties(rec.properties).items() if k not in _PULSAR_RETRY_PROPERTIES}
        for key in (Prop.TAGS, Prop.KEYS, Prop.UNIQ_KEY, Prop.ORIGIN_MESSAGE_ID):
            if rec.properties.get(key):
                props[key] = rec.properties[key]
        props[REDRIVEN_FROM] = msg_id
        result = core.send(SendRequest(REDRIVE_PRODUCER_GROUP, topic, rec.body, -1, props, rec.flag,
                                       born_timestamp=core.clock.now_ms()), channel)
        if result.outcome is not SendOutcome.STORED:
            _save(core, doc)
            raise DeadLetterError(f"re-driving {msg_id} to {topic} was refused: {result.remark or result.outcome.value}"
                                  f" ({len(sent)} sent before it)")
        new_id = result.msg_id
        marks[msg_id] = new_id
        sent.append((msg_id, new_id))
    if sent and not dry_run:
        _save(core, doc)
    return RedriveResult(tuple(sent), tuple(already), dry_run,
                         {key: records[key].msg_id for key in (*(d for d, _ in sent), *already)})


def _save(core, doc: dict) -> None:
    core.store.save_config(_CONFIG, doc)


def redrive_on(cores: list, group: str, ids: list[str] | None = None, *, dry_run: bool = False) -> RedriveResult:
    """``redrive`` over the brokers of a cluster: each id on the brokers holding what it
    names, or (ids None) every broker that holds dead letters of ``group``. DeadLetterError
    as there, and for an id no running broker holds."""
    if ids is None:
        found = [c for c in cores if dead_letters(c, group)]
        if not found:
            raise DeadLetterError(f"group {group!r} has no dead letters (no %DLQ%{group} messages)")
        parts = [redrive(c, group, None, dry_run=dry_run) for c in found]
    else:
        ids = [i for i in ids if i]
        mine = {}
        for c in cores:
            records = {rec.offset_msg_id: rec for rec in _records(c, group)}
            mine[id(c)] = [i for i in ids if _named(records, i)]
        stray = [i for i in ids if not any(i in m for m in mine.values())]
        if stray:
            raise _not_dead_letters(group, stray, " on a running broker")
        parts = [redrive(c, group, mine[id(c)], dry_run=dry_run) for c in cores if mine[id(c)]]
    return RedriveResult(tuple(x for r in parts for x in r.sent), tuple(x for r in parts for x in r.already),
                         dry_run, {k: v for r in parts for k, v in r.msg_ids.items()})
