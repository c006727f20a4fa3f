"""One message's life across the brokers of a server and the dialects that read it
(sans-I/O, read-only): the dashboard's message page.

Finding it (``find``): a search text is tried as an offsetMsgId (the broker and commit-log
offset it names), a Pulsar message id (``ledger:entry:...`` or ``(ledger,entry,...)``), a
message id (UNIQ_KEY) and a key (a word of KEYS), in every topic of every running broker.
Each message found is one row, however many copies of it the store holds.

Its life (``life``) is built from two sources, and says which each line comes from:

  store   what the store proves, the same after a restart: each stored copy — the
          original, the delay queue's copy (level, due time, still waiting or not), each
          send-back and retry copy (group, attempt), the re-stores when due, the dead
          letter and its re-drive (config/redriven.json) — and what the committed
          offsets and saved Pulsar cursors say (consumed, acknowledged, or not yet)
  events  what only the core's delivery log knew (delivery_log.py, in memory, bounded):
          each delivery with its client and attempt or redelivery count, 5.x acks, negative
          acks, changed invisible times and expiries, Pulsar acks and negative acks. It
          starts when the broker started (``events_since_ms``): what came before a restart
          is not known, and the page says so
  live    the broker's state now: a 5.x delivery in flight (invisible until), a Pulsar
          message's redelivery count

The copies of a message are found by its message id (UNIQ_KEY: every copy, the re-driven
one too, keeps it) or, without one (a Pulsar message), by ORIGIN_MESSAGE_ID (the letters
a Pulsar client writes carry the original's offsetMsgId, as the Pulsar front stores them)
and the re-drive marks.
"""
from __future__ import annotations

import re
from datetime import datetime, timezone

from rocketmq_emulator.store.accounting import (PULSAR_DLQ_SUFFIX, PULSAR_RETRY_SUFFIX, Kind, classify, group_of)
from rocketmq_emulator.store.records import (DLQ_PREFIX, POP_RETRY_SEPARATOR, RETRY_PREFIX, SCHEDULE_TOPIC, Prop,
                                             RecordError, create_offset_msg_id, decode_offset_msg_id,
                                             decode_record, tags_code)

from . import delivery_log as L
from ..rocketmq_model.dead_letters import REDRIVEN_FROM, redriven_marks
from ..rocketmq_model.message_types import LITE_TOPIC_PROPERTY
from ..rocketmq_model.priorities import priority_of
from ..pulsar_model.names import STORE_PREFIX, ledger_id, message_id_text, parse_message_id, pulsar_topic
from ..pulsar_model.names import shown_topic as _shown_topic
from .retry_ladders import fresh_indexes, is_copy_topic

__all__ = ["find", "life", "fold_repeats", "FIND_LIMIT", "HISTORY_SHOWN", "NOW_SHOWN", "COPIES_SHOWN"]

FIND_LIMIT = 50
HISTORY_SHOWN, NOW_SHOWN, COPIES_SHOWN = 400, 100, 200      # lines and rows of one life, at most
RESEND_MS = 10_000                      # a producer's resends of one message id come within this
_COPIES_LIMIT = 2000                    # records of one message read at most
_GROUPS_SHOWN = 20                      # consumption lines per copy at most
_FAR = (1 << 63) - 1
_OFFSET_ID = re.compile(r"^(?:[0-9A-Fa-f]{32}|[0-9A-Fa-f]{56})$")
_DELIVERABLE = (Kind.ORIGINAL, Kind.DELAYED_DELIVERY, Kind.RETRY_DELIVERY, Kind.RETRY_DIRECT)
# Within one millisecond (a virtual clock's), lines go by the commit log: a copy at its
# offset, an event at the log's end when it happened (before a record stored at that end),
# a line about the state now after all that is known of its copy.
_EVENT, _STORED, _STATE = 0, 1, 2
_NOW = float("inf")


def _live(cores) -> list:
    return [c for c in cores if not c.stopped]


# -- finding -------------------------------------------------------------------------------------
def _by_offset_id(cores, text: str):
    if not _OFFSET_ID.match(text):
        return None
    try:
        _, phys = decode_offset_msg_id(text)
    except ValueError:
        return None
    for core in _live(cores):
        if create_offset_msg_id(core.store_host, phys) == text.upper():
            rec = core.store.look_message_by_offset(phys)
            if rec is not None:
                return core, rec
    return None


def _by_pulsar_id(cores, text: str):
    parsed = parse_message_id(text)
    if parsed is None:
        return None
    ledger, entry = parsed
    for core in _live(cores):
        for topic in core.store.queues():
            if topic.startswith(STORE_PREFIX) and ledger_id(topic) == ledger:
                rec = core.store.record_at(topic, 0, entry)
                if rec is not None:
                    return core, rec
    return None


def _by_key(cores, key: str, limit: int) -> list:
    """(core, record) of every record whose UNIQ_KEY or a KEYS word is ``key``, newest first."""
    out = []
    for core in _live(cores):
        store = core.store
        for topic in store.queues():
            for raw in store.query_by_key(topic, key, limit, 0, _FAR):
                try:
                    out.append((core, decode_record(raw, check_crc=False)))
                except RecordError:
                    continue
    out.sort(key=lambda cr: cr[1].store_timestamp, reverse=True)
    return out


def _family_id(rec) -> str:
    """The id the message page knows a message by: its message id (UNIQ_KEY), else its
    original's offsetMsgId (a copy names it in ORIGIN_MESSAGE_ID)."""
    p = rec.properties
    return p.get(Prop.UNIQ_KEY) or p.get(Prop.ORIGIN_MESSAGE_ID) or rec.offset_msg_id


def _original_topic(rec) -> str:
    p = rec.properties
    if rec.topic == SCHEDULE_TOPIC or rec.topic.startswith((RETRY_PREFIX, DLQ_PREFIX)):
        return p.get(Prop.RETRY_TOPIC) or p.get(Prop.REAL_TOPIC) or rec.topic
    if p.get(Prop.REAL_TOPIC) and rec.topic.endswith((PULSAR_DLQ_SUFFIX, PULSAR_RETRY_SUFFIX)):
        return p[Prop.REAL_TOPIC]
    return rec.topic


def find(cores, text: str, limit: int = FIND_LIMIT) -> list[dict]:
    """The messages ``text`` names, one row each (newest first): ``{"id", "matched",
    "topic", "broker", "store_ms", "keys", "tags", "body"}``; ``id`` opens ``life``."""
    text = text.strip()
    if not text:
        return []
    hits = []
    for how, finder in (("offset id", _by_offset_id), ("Pulsar message id", _by_pulsar_id)):
        found = finder(cores, text)
        if found is not None:
            hits.append((how, *found))
    for core, rec in _by_key(cores, text, limit * 4):
        hits.append(("message id" if rec.properties.get(Prop.UNIQ_KEY) == text else "key", core, rec))
    rows: dict[str, dict] = {}
    for how, core, rec in hits:
        fid = _family_id(rec)
        row = rows.get(fid)
        if row is not None:             # another copy: the row shows the first one stored
            if rec.store_timestamp < row["store_ms"]:
                row.update(broker=core.config.broker_name, store_ms=rec.store_timestamp)
            continue
        if len(rows) >= limit:
            continue
        p = rec.properties
        rows[fid] = {"id": fid, "matched": how, "topic": _shown_topic(_original_topic(rec)),
                     "broker": core.config.broker_name, "store_ms": rec.store_timestamp, "keys": p.get(Prop.KEYS),
                     "tags": p.get(Prop.TAGS), "body": rec.body[:80].decode("utf-8", "replace")}
    return sorted(rows.values(), key=lambda r: r["store_ms"], reverse=True)


# -- gathering the copies ------------------------------------------------------------------------
def _resolve(cores, ident: str, index_of):
    """(core, record) the id names, or None: an offset id or a Pulsar message id is read
    where it points; a message id is looked up among the copies the indexes know, and in
    the key index only when none does (a search costs that, a page's next poll does not)."""
    found = _by_offset_id(cores, ident) or _by_pulsar_id(cores, ident)
    if found is not None:
        return found
    for core in _live(cores):
        index = index_of(core)
        for topic, qid, off in index.copies(uniq=ident) + index.known_originals(ident):
            rec = core.store.record_at(topic, qid, off)
            if rec is not None and rec.properties.get(Prop.UNIQ_KEY) == ident:
                return core, rec
    for core, rec in _by_key(cores, ident, 1):
        if rec.properties.get(Prop.UNIQ_KEY) == ident:
            return core, rec
    return None


def _family(cores, index_of, core, rec) -> list:
    """Every stored copy of the message ``rec`` belongs to, on every running broker: by its
    message id (the copies the indexes know, and its originals in business topics); without
    one (a Pulsar message), its original and the copies naming it in ORIGIN_MESSAGE_ID;
    either way the re-driven copies the re-drive marks name, and theirs."""
    family: dict[tuple[str, str], tuple] = {}

    def take(c, r) -> None:
        if r is not None:
            family[(c.config.broker_name, r.offset_msg_id)] = (c, r)

    uniq = rec.properties.get(Prop.UNIQ_KEY)
    live = _live(cores)
    if uniq:
        for c in live:
            index = index_of(c)
            copies = [r for r in (c.store.record_at(*pos) for pos in index.copies(uniq=uniq))
                      if r is not None and r.properties.get(Prop.UNIQ_KEY) == uniq]
            for r in copies:
                take(c, r)
            for pos in _originals(c, index, uniq, copies):
                r = c.store.record_at(*pos)
                if r is not None and r.properties.get(Prop.UNIQ_KEY) == uniq:
                    take(c, r)
    else:
        origin = rec.properties.get(Prop.ORIGIN_MESSAGE_ID)
        root = _by_offset_id(cores, origin) if origin else None
        take(*(root or (core, rec)))
    take(core, rec)
    marks = {dead: new for c in live for m in redriven_marks(c).values() for dead, new in m.items() if new}
    for _ in range(8):                  # original -> letters -> re-driven copy -> its letters ...
        before = len(family)
        ids = [k[1] for k in family]
        for c in live:
            index = index_of(c)
            if not uniq:
                for oid in ids:
                    for pos in index.copies(origin=oid):
                        take(c, c.store.record_at(*pos))
        for oid in ids:
            if oid in marks:
                found = _by_offset_id(cores, marks[oid])
                if found is not None:
                    take(*found)
        if len(family) == before:
            break
    return list(family.values())[:_COPIES_LIMIT]


def _originals(core, index, uniq: str, copies: list) -> list[tuple[str, int, int]]:
    """Where the records with message id ``uniq`` are in business topics (the original, a
    delayed one come due, a producer's resend): asked of the key index once, then kept by
    ``index`` while the copies and the delayed originals waiting stay as they were — and,
    while the newest is younger than RESEND_MS by the broker's clock (a producer resends
    within its send timeouts), asked again at every 16th look. (Asking costs the key
    index's catch-up with everything stored since it last caught up.)"""
    delivered = core.schedule.scheduler.offsets()
    waiting = sum(1 for r in copies if r.topic == SCHEDULE_TOPIC and not r.properties.get(Prop.REAL_TOPIC, "")
                  .startswith(RETRY_PREFIX) and r.queue_offset >= delivered.get(r.queue_id + 1, 0))
    signature = (len(copies), waiting)
    kept = index.originals_if(uniq, signature, core.clock.now_ms() - RESEND_MS)
    if kept is not None:
        return kept
    store, found = core.store, []
    for topic in store.queues():
        if is_copy_topic(topic):
            continue
        for raw in store.query_by_key(topic, uniq, _COPIES_LIMIT, 0, _FAR):
            try:
                r = decode_record(raw, check_crc=False)
            except RecordError:
                continue
            if r.properties.get(Prop.UNIQ_KEY) == uniq:
                found.append((topic, r.queue_id, r.queue_offset, r.store_timestamp))
    index.keep_originals(uniq, signature, found)
    return [p[:3] for p in found]


# -- the life -------------------------------------------------------------------------------------
def life(cores, ident: str, index_of=None) -> dict | None:
    """The message ``ident`` names (any id ``find`` takes but a key) and its life; None
    when no running broker holds it. ``index_of(core)``: its refreshed RetryIndex (kept
    between calls by the caller; by default, made for this call)."""
    if index_of is None:
        index_of = fresh_indexes()
    found = _resolve(cores, ident.strip(), index_of)
    if found is None:
        return None
    family = _family(cores, index_of, *found)
    family.sort(key=lambda cr: (cr[1].store_timestamp, cr[0].config.broker_name, cr[1].commit_log_offset))
    kinds = [(c, r, classify(r.topic, r.properties, r.sys_flag)) for c, r in family]
    originals = [x for x in kinds if x[2] in (Kind.ORIGINAL, Kind.DELAYED_ORIGINAL)
                 and REDRIVEN_FROM not in x[1].properties]
    root_core, root, _ = (originals or kinds)[0]
    timeline: list[tuple] = []
    seq = 0

    def add(time_ms, position, rank, entry):
        nonlocal seq
        seq += 1
        # a line about the state now (consumed, pending, in flight) has no time of its own: the
        # lines about now come last, in the order of their copies (the same after a restart)
        entry["time_ms"] = None if rank == _STATE else time_ms
        timeline.append((_NOW if rank == _STATE else time_ms, entry["broker"], position, rank, seq, entry))

    marks_of = {c.config.broker_name: redriven_marks(c) for c in _live(cores)}
    for c, r, kind in kinds:
        for entry in _store_entries(c, r, kind, marks_of.get(c.config.broker_name, {})):
            add(r.store_timestamp, r.commit_log_offset, _STORED, entry)
        if kind in _DELIVERABLE:
            for time_ms, position, rank, entry in _delivery_entries(c, r):
                add(time_ms, position, rank, entry)
    timeline.sort(key=lambda t: t[:5])
    lines = fold_repeats([t[5] for t in timeline])
    p = root.properties
    # bounded (a message retried by a thousand groups has thousands of lines): the first of
    # its history, then what is so now
    history = [e for e in lines if e["time_ms"] is not None]
    now = [e for e in lines if e["time_ms"] is None]
    pt = pulsar_topic(root.topic)
    since = {c.config.broker_name: c.deliveries.since_ms for c in _live(cores)}
    dropped = {c.config.broker_name: c.deliveries.dropped_upto_ms for c in _live(cores)
               if c.deliveries.dropped_upto_ms is not None}
    stopped = [c.config.broker_name for c in cores if c.stopped]
    return {
        "id": _family_id(root), "msg_id": p.get(Prop.UNIQ_KEY), "offset_msg_id": root.offset_msg_id,
        "pulsar_message_id": message_id_text(root.topic, root.queue_offset) if pt is not None else None,
        "topic": _shown_topic(root.topic), "store_topic": root.topic, "broker": root_core.config.broker_name,
        "queue_id": root.queue_id, "queue_offset": root.queue_offset, "keys": p.get(Prop.KEYS),
        "tags": p.get(Prop.TAGS), "born_ms": root.born_timestamp, "store_ms": root.store_timestamp,
        # a 5.x priority message's priority, a lite topic's message's lite topic (None: not one)
        "priority": priority_of(p), "lite_topic": p.get(LITE_TOPIC_PROPERTY),
        # which clock each time is on: born is what the producer stamped (BORN_TIMESTAMP; a
        # real client stamps its wall clock, the SDK in this process the broker's clock), every
        # other time of the page is the broker's clock (virtual: moved by `clock advance`)
        "clocks": {"born_ms": "the producer's clock", "store_ms": _broker_clock(root_core)},
        "body_size": len(root.body), "body": _body_text(root.body),
        "properties": {k: v for k, v in p.items() if k != "PULSAR_METADATA"},
        "copies": [{"kind": kind.value, "broker": c.config.broker_name, "topic": _shown_topic(r.topic),
                    "queue_id": r.queue_id, "queue_offset": r.queue_offset, "offset_msg_id": r.offset_msg_id,
                    "store_ms": r.store_timestamp, "reconsume_times": r.reconsume_times}
                   for c, r, kind in kinds[:COPIES_SHOWN]],
        "copies_total": len(kinds),
        "timeline": history[:HISTORY_SHOWN] + now[:NOW_SHOWN],
        "timeline_total": len(lines),
        "now": [e["text"] for e in lines if e.get("now")][:NOW_SHOWN],
        "events_since_ms": since, "events_dropped_upto_ms": dropped,
        "before_events": any(root.store_timestamp < ms for ms in since.values()),
        "stopped_brokers": stopped,
    }


def fold_repeats(entries: list[dict]) -> list[dict]:
    """Runs of lines that say the same of consecutive copies in one queue (a group is
    done with each retry copy of a long ladder: "... queue 0 offset N (its committed
    offset 40 is past it)" for every N) as one line naming the offsets and how many
    ("... queue 0 offsets 23-39 (17 copies) ..."), with ``folded`` (that many) and
    ``queue_offsets``. Lines at different times, or about other queues, groups or
    sources, stay apart."""
    out: list[dict] = []
    run: list[dict] = []
    shape = None

    def close() -> None:
        if len(run) == 1:
            out.append(run[0])
        elif run:
            offsets = [e["queue_offset"] for e in run]
            text = run[0]["text"].replace(f"offset {offsets[0]}",
                                          f"offsets {_ranges(offsets)} ({len(run)} copies)", 1)
            out.append(dict(run[0], text=text, folded=len(run), queue_offsets=offsets))
        run.clear()

    for e in entries:
        key = _repeat_shape(e)
        if key is None or key != shape:
            close()
        shape = key
        run.append(e)
    close()
    return out


def _repeat_shape(e: dict):
    """What a line says but for the offset of its copy (None: a line about no one copy)."""
    off = e.get("queue_offset")
    mark = f"offset {off}"
    if off is None or mark not in e["text"]:
        return None
    return (e["time_ms"], e["what"], e["source"], e["broker"], e.get("group"), e.get("topic"), e.get("queue_id"),
            e.get("now"), e["text"].replace(mark, "\0", 1))


def _ranges(offsets: list[int]) -> str:
    """3, 4, 5, 9 -> "3-5, 9"."""
    parts = []
    start = prev = offsets[0]
    for cur in offsets[1:] + [None]:
        if cur is not None and cur == prev + 1:
            prev = cur
            continue
        parts.append(str(start) if start == prev else f"{start}-{prev}")
        start = prev = cur
    return ", ".join(parts)


def _broker_clock(core) -> str:
    return "the broker's virtual clock" if core.clock.is_virtual else "the broker's wall clock"


def _body_text(body: bytes) -> dict:
    try:
        return {"text": body[:2048].decode("utf-8"), "encoding": "utf-8", "truncated": len(body) > 2048}
    except UnicodeDecodeError:
        return {"text": body[:1024].hex(), "encoding": "hex", "truncated": len(body) > 1024}


def _entry(what: str, text: str, source: str, core, rec=None, **more) -> dict:
    e = {"what": what, "text": text, "source": source, "broker": core.config.broker_name}
    if rec is not None:
        e.update(topic=_shown_topic(rec.topic), queue_id=rec.queue_id, queue_offset=rec.queue_offset,
                 offset_msg_id=rec.offset_msg_id)
    e.update({k: v for k, v in more.items() if v is not None})
    return e


def _iso(ms: int | None) -> str:
    """A time of the broker's clock as the page and the CLI write it (ISO 8601, UTC)."""
    if ms is None:
        return "-"
    return datetime.fromtimestamp(ms / 1000, timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.") + f"{ms % 1000:03d}Z"


def _fmt_ms(ms: int) -> str:
    if ms % 3_600_000 == 0:
        return f"{ms // 3_600_000} h"
    if ms % 60_000 == 0:
        return f"{ms // 60_000} min"
    return f"{ms / 1000:g} s"


def _store_entries(core, rec, kind: Kind, marks: dict):
    """The lines this stored copy proves."""
    p, t = rec.properties, rec.store_timestamp
    topic = _shown_topic(rec.topic)
    group = group_of(kind, rec.topic, p) if kind in (Kind.RETRY_SCHEDULED, Kind.RETRY_DELIVERY, Kind.RETRY_DIRECT,
                                                    Kind.DEAD_LETTER) else None
    n = rec.reconsume_times
    if kind is Kind.ORIGINAL:
        if p.get(REDRIVEN_FROM):
            yield _entry("redriven", f"re-driven from the dead letter {p[REDRIVEN_FROM]} into {topic}: "
                                        f"a new message with a fresh retry budget", "store", core, rec,
                                        from_id=p[REDRIVEN_FROM])
        else:
            yield _entry("stored", f"stored in {topic} (queue {rec.queue_id}, offset {rec.queue_offset})",
                                      "store", core, rec)
    elif kind in (Kind.DELAYED_ORIGINAL, Kind.RETRY_SCHEDULED):
        level = rec.queue_id + 1
        delays = core.levels.delays_ms
        delay = delays[level - 1] if level <= len(delays) else 0
        due = t + delay
        waiting = rec.queue_offset >= core.schedule.scheduler.offsets().get(level, 0)
        state = f"waiting now, due {_iso(due)}" if waiting else "re-stored when due"
        if kind is Kind.DELAYED_ORIGINAL:
            yield _entry("delayed", f"sent with delay level {level} ({_fmt_ms(delay)}) for "
                                       f"{_shown_topic(p.get(Prop.REAL_TOPIC, ''))}: in the delay queue ({state})",
                                       "store", core, rec, level=level, due_ms=due, now=waiting or None)
        else:
            yield _entry("sent_back", f"{group} failed it (failure {n}): sent back to delay level "
                                       f"{level} ({_fmt_ms(delay)}) ({state})", "store", core, rec, group=group,
                                       attempt=n, level=level, due_ms=due, now=waiting or None)
    elif kind is Kind.DELAYED_DELIVERY:
        yield _entry("due", f"due: re-stored in {topic}", "store", core, rec)
    elif kind is Kind.RETRY_DELIVERY:
        yield _entry("due", f"due: re-stored in {topic} for {group}'s retry {n}", "store", core, rec,
                               group=group, attempt=n)
    elif kind is Kind.RETRY_DIRECT:
        if rec.topic.startswith(RETRY_PREFIX) and POP_RETRY_SEPARATOR in rec.topic:
            text = (f"delivery attempt {n} for {group} failed (negatively acked, or its invisible time ended): "
                    f"retry copy in {topic}, delivered as attempt {n + 1}")
        elif rec.topic.startswith(RETRY_PREFIX):
            text = f"{group} sent it back (the client's fallback): retry copy {n} in {topic}"
        else:
            delay = p.get("DELAY_TIME")
            text = (f"subscription {group} reconsume_later (count {p.get('RECONSUMETIMES', n)}): retry letter in "
                    f"{topic}" + (f", delivered after {_fmt_ms(int(delay))}" if delay and delay.isdigit() else ""))
        yield _entry("retry_copy", text, "store", core, rec, group=group, attempt=n)
    elif kind is Kind.DEAD_LETTER:
        redriven = marks.get(group, {}).get(rec.offset_msg_id)
        text = f"dead-lettered by {group} (reconsume times {n}): stored in {topic}"
        yield _entry("dead_lettered", text + (f"; re-driven as {redriven}" if redriven else
                                                         " (dead now)"), "store", core, rec, group=group,
                                attempt=n, redriven_as=redriven, now=None if redriven else True)


def _readers(core, rec) -> list[str]:
    """The groups whose committed offsets cover the copy's topic (its own group for a
    retry topic)."""
    if rec.topic.startswith(RETRY_PREFIX):
        return [rec.topic[len(RETRY_PREFIX):].partition(POP_RETRY_SEPARATOR)[0]]
    suffix = "@"
    prefix = rec.topic + suffix
    return sorted(k[len(prefix):] for k in core.store.offset_table() if k.startswith(prefix))


def _delivery_entries(core, rec):
    """(time, position, rank, line) of this deliverable copy's deliveries (the event log)
    and of what the committed offsets, cursors and deliveries in flight say of it now."""
    store, topic, qid, off = core.store, rec.topic, rec.queue_id, rec.queue_offset
    code = tags_code(rec.properties.get(Prop.TAGS))
    last = (None, rec.commit_log_offset)           # (the lines about now: in the order of their copies)
    for time_ms, kind, group, _lo, _hi, attempt, client, extra, pos in core.deliveries.about(topic, qid, off, code):
        who = client or "a consumer"
        if kind == L.PULL:
            yield time_ms, pos, _EVENT, _entry("delivered", f"delivered to {who} ({group}), reconsume times "
                                               f"{rec.reconsume_times}", "events", core, rec, group=group,
                                               client=client, attempt=rec.reconsume_times)
        elif kind == L.POP:
            yield time_ms, pos, _EVENT, _entry("delivered", f"received by {who} ({group}), delivery attempt {attempt}, "
                                               f"invisible until {_iso(extra)}", "events", core, rec, group=group,
                                               client=client, attempt=attempt, until_ms=extra)
        elif kind == L.DISPATCH:
            yield time_ms, pos, _EVENT, _entry("delivered", f"delivered to consumer {who} of subscription {group}, "
                                               f"redelivery count {attempt}", "events", core, rec, group=group,
                                               client=client, attempt=attempt)
        else:
            text = {L.ACK: f"acked by {group}", L.NACK: f"negatively acked by {group} (visible again at once)",
                    L.INVISIBLE: f"{group} changed its invisible time: visible again at {_iso(extra)}",
                    L.EXPIRED: f"its invisible time ended before {group} acked it",
                    L.PULSAR_ACK: f"acknowledged by subscription {group}",
                    L.PULSAR_NACK: f"subscription {group} asked for it again (negative ack or ack timeout): "
                                   f"redelivery count {attempt}"}.get(kind, kind)
            yield time_ms, pos, _EVENT, _entry(kind, text, "events", core, rec, group=group, attempt=attempt,
                                            until_ms=extra if kind == L.INVISIBLE else None)
    readers = _readers(core, rec)
    pulsar = topic.startswith(STORE_PREFIX)
    where = f"{_shown_topic(topic)} offset {off}" if pulsar else f"{_shown_topic(topic)} queue {qid} offset {off}"
    for group in readers[:_GROUPS_SHOWN]:
        if pulsar:
            acked = core.subscriptions.acknowledged(group, topic, off)
            if acked is None:
                continue
            count = core.subscriptions.redelivery_count(group, topic, off)
            text = (f"acknowledged by subscription {group} (its cursor is past {where})" if acked else
                    f"not acknowledged by subscription {group} yet ({where}"
                    + (f", redelivery count {count})" if count else ")"))
            yield *last, _STATE, _entry("consumed" if acked else "pending", text, "store", core, rec, group=group,
                                        now=None if acked else True)
            continue
        committed = store.query_offset(group, topic, qid)
        flight = next((s["in_flight"].get(off) for s in core.pops.queue_states(group)
                       if s["topic"] == topic and s["queue_id"] == qid and off in s["in_flight"]), None)
        if flight is not None:
            yield *last, _STATE, _entry("in_flight", f"in flight for {group}: invisible until {_iso(flight[0])}"
                                        + (" (renewed while its client is there)" if flight[1] else ""), "live",
                                        core, rec, group=group, until_ms=flight[0], now=True)
        elif committed < 0:
            yield *last, _STATE, _entry("pending", f"not consumed by {group} yet ({where}; no committed offset there "
                                        f"yet)", "store", core, rec, group=group, now=True)
        elif committed > off:
            yield *last, _STATE, _entry("consumed", f"{group} is done with {where} (its committed offset {committed} "
                                        f"is past it)", "store", core, rec, group=group)
        else:
            yield *last, _STATE, _entry("pending", f"not consumed by {group} yet ({where}; its committed offset is "
                                        f"{committed})", "store", core, rec, group=group, now=True)
    if len(readers) > _GROUPS_SHOWN:
        yield *last, _STATE, _entry("more", f"and {len(readers) - _GROUPS_SHOWN} more groups read {topic}", "store",
                                    core, rec)
