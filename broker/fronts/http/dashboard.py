"""What the dashboard shows, as JSON documents read from the cores (sans-I/O): the
overview (``/api/state``) and the views behind the other pages. Each is bounded — a page
of rows and the count of all — so 1,000 groups or 100,000 waiting messages cost a page,
not a table of everything. Routes: dashboard_api.py.

``/api/state`` (polled every second by the page):

  clock        {"virtual": bool, "now_ms": int}
  brokers      [{"name", "up", "permission"}]
  totals       {"groups", "topics", "waiting", "dead_letters"}    of everything, not just shown
  topics       [{"broker", "topic", "messages"}]            business topics (the first 200)
  groups       [{"group", "dialects", "lag", "consumed", "retry_messages", "dead_letters",
                 "waiting", "ladder": [{"level", "delay_ms", "waiting"}]}]
               the 100 groups with the most dead letters, retries waiting and lag
  waiting      [{"broker", "group", "level", "due_ms", "msg_id", "reconsume_times", "body"}]
               the first 200 messages to come due (a 4.x retry, or a delayed send: no group)
  delay_queue  [{"level", "delay_ms", "waiting"}]           every delay level, all brokers
  dead_letters [{"broker", "group", "msg_id", "offset_msg_id", "keys", "topic", "attempts",
                 "died_at_ms", "redriven_as", "body_size"}]     the newest 100
  half_messages [{"broker", "transaction_id", "topic", "queue_id", "producer_group", "stored_ms", "checks",
                 "next_check_ms", "body_size"}]   transactions waiting for their producer (the first 200)

``msg_id`` is the message id (UNIQ_KEY) everywhere, as consumers, `message send` and the
event feed give it (a message without one: its offsetMsgId); a dead letter has its DLQ
record's ``offset_msg_id`` beside it (the id `dlq list` shows and a re-drive takes).
"""
from __future__ import annotations

import heapq
from collections import Counter, deque

from rocketmq_emulator.store.records import DLQ_PREFIX, RETRY_PREFIX, SCHEDULE_TOPIC, Prop

from ...events import EventKind
from ...facade.across import DIALECTS, RATE_KINDS as KINDS, consumer_rows, find_messages, group_detail, known_groups
from ...facade.across import message_life
from ...faults.rules import fault_of
from ...pulsar_model.names import shown_topic

# The retry lifecycle's events, not every store (that would cost each put an event), and
# the faults fault rules applied (so a user sees why a message came back).
FEED_KINDS = (EventKind.DELAYED, EventKind.REDELIVERED, EventKind.SENT_BACK, EventKind.DEAD_LETTERED,
              EventKind.FAULT)

__all__ = ["dashboard_state", "DashboardViews", "WAITING_SHOWN", "EventFeed", "FEED_KINDS", "ViewError"]

WAITING_SHOWN = 200
GROUPS_SHOWN = 100
TOPICS_SHOWN = 200
DEAD_SHOWN = 100
MAX_PAGE = 500


class ViewError(ValueError):
    """A request the views cannot answer: ``status`` (400 bad input, 404 nothing there)
    and one readable line."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


def _live(cores) -> list:
    return [c for c in cores if not c.stopped]


class DashboardViews:
    """The views of the cores ``cores()`` returns (a cluster's members, up or not); keeps
    each core's RetryIndex between requests (a broker started again is a new core: a new
    index)."""

    def __init__(self, cores) -> None:
        self.cores = cores
        self._indexes: dict[int, tuple[object, object]] = {}   # id -> (core, its RetryIndex)

    def _fresh(self, cores) -> callable:
        """``index_of(core)`` for one request: each core's index refreshed once."""
        done: dict[int, object] = {}
        for core in cores:
            held = self._indexes.get(id(core))
            if held is None or held[0] is not core:
                held = self._indexes[id(core)] = (core, core.retry_index())
        for key in [k for k, (c, _) in self._indexes.items() if not any(c is x for x in cores)]:
            del self._indexes[key]

        def index_of(core):
            index = done.get(id(core))
            if index is None:
                index = done[id(core)] = self._indexes[id(core)][1]
                index.refresh()
            return index
        return index_of

    # -- the overview ---------------------------------------------------------------------------
    def state(self) -> dict:
        cores = self.cores()
        live = _live(cores)
        index_of = self._fresh(live)
        levels = cores[0].delay_levels_ms()
        topics = []
        for core in cores:
            queues = core.stored_queues()
            for topic in sorted(queues):
                if topic.startswith((RETRY_PREFIX, DLQ_PREFIX)) or core.is_system_topic(topic) \
                        or topic == SCHEDULE_TOPIC or core.is_lite_store_topic(topic):
                    continue            # (a lite topic's queue: counted under "lite" instead)
                topics.append({"broker": core.config.broker_name, "topic": shown_topic(topic),
                               "messages": core.stored_message_count(topic, queues)})
        groups = self._groups(live, index_of, levels)
        dead_total = sum(g["dead_letters"] for g in groups.values())
        waiting_total = sum(n for core in live for lvl in index_of(core).waiting.values() for n in lvl.values())
        delay_queue = [{"level": lvl, "delay_ms": levels[lvl - 1],
                        "waiting": sum(c.delayed_waiting(lvl) for c in live)}
                       for lvl in range(1, len(levels) + 1)]
        shown = sorted(groups.values(), key=lambda g: (-g["dead_letters"], -g["waiting"], -g["lag"], g["group"]))
        return {"clock": self.clock(),
                "brokers": [{"name": c.config.broker_name, "up": not c.stopped,
                             "permission": c.config.broker_permission} for c in cores],
                "totals": {"groups": len(groups), "topics": len(topics), "waiting": waiting_total,
                           "dead_letters": dead_total},
                "topics": topics[:TOPICS_SHOWN], "groups": shown[:GROUPS_SHOWN],
                "waiting": self._waiting(live, index_of, None, None, 0, WAITING_SHOWN)[0],
                "delay_queue": delay_queue,
                "dead_letters": self._newest_dead(live, [g["group"] for g in shown if g["dead_letters"]]),
                "half_messages": self._half_messages(live),
                "lite": _lite_census(live)}

    def _half_messages(self, live) -> list[dict]:
        """Transactions waiting for their producer's commit or rollback, oldest first."""
        half = [dict(m.to_json(), topic=shown_topic(m.topic), broker=core.config.broker_name)
                for core in live for m in core.waiting_transactions()]
        return sorted(half, key=lambda m: (m["stored_ms"], m["transaction_id"]))[:WAITING_SHOWN]

    def _groups(self, live, index_of, levels) -> dict[str, dict]:
        groups: dict[str, dict] = {}
        known = {g["group"]: g["dialects"] for g in known_groups(live)}
        for core in live:
            queues = core.stored_queues()
            index = index_of(core)
            dead = core.dead_letter_counts()
            progress = [p for p in core.group_progress() if not p[1].startswith(RETRY_PREFIX)]
            names = set(dead) | {p[0] for p in progress} | {t[len(RETRY_PREFIX):].partition("+")[0]
                                                            for t in queues if t.startswith(RETRY_PREFIX)}
            for name in names:
                g = groups.setdefault(name, {"group": name, "dialects": known.get(name, []), "lag": 0, "consumed": 0,
                                             "retry_messages": 0, "dead_letters": 0, "waiting": 0,
                                             "ladder": Counter()})
                g["retry_messages"] += core.stored_message_count(RETRY_PREFIX + name, queues)
                g["dead_letters"] += dead.get(name, 0)
            for owner, _topic, committed, lag in progress:
                g = groups[owner]
                g["consumed"] += committed
                g["lag"] += lag
            for lvl, counts in index.waiting.items():
                for name, n in counts.items():
                    if n and name in groups:
                        groups[name]["ladder"][lvl] += n
                        groups[name]["waiting"] += n
        for g in groups.values():
            g["ladder"] = [{"level": lvl, "delay_ms": levels[lvl - 1], "waiting": n}
                           for lvl, n in sorted(g["ladder"].items()) if n]
        return groups

    def _newest_dead(self, live, groups: list[str]) -> list[dict]:
        rows = []
        for core in live:
            for group in groups:
                page, _ = core.dead_letter_page(group, 0, DEAD_SHOWN)
                rows += [_dead_row(core, group, d) for d in page]
                if len(rows) >= 4 * DEAD_SHOWN:
                    break
        rows.sort(key=lambda d: d["died_at_ms"], reverse=True)
        return rows[:DEAD_SHOWN]

    # -- waiting messages ---------------------------------------------------------------------
    def _waiting(self, live, index_of, group: str | None, level: int | None, start: int,
                 limit: int) -> tuple[list[dict], int]:
        """Messages waiting in the delay queue, soonest due first (``group``: its retries
        only, "" a producer's delayed sends; ``level``: that level only)."""
        streams, total = [], 0
        for rank, core in enumerate(live):
            index = index_of(core)
            for lvl in range(1, core.delay_level_count + 1):
                if level is not None and lvl != level:
                    continue
                counts = index.waiting.get(lvl, Counter())
                n = sum(counts.values()) if group is None else counts.get(group, 0)
                if n:
                    total += n
                    streams.append(_level_stream(core, rank, index, lvl, group))
        out = []
        for due, lvl, _, off, core in _islice(heapq.merge(*streams), start, start + limit):
            rec = core.stored_record(SCHEDULE_TOPIC, lvl - 1, off)
            if rec is None:
                continue
            real = rec.properties.get(Prop.REAL_TOPIC, "")
            out.append({"broker": core.config.broker_name,
                        "group": real[len(RETRY_PREFIX):] if real.startswith(RETRY_PREFIX) else "",
                        "level": lvl, "due_ms": due, "msg_id": rec.properties.get(Prop.UNIQ_KEY) or rec.offset_msg_id,
                        "offset_msg_id": rec.offset_msg_id, "reconsume_times": rec.reconsume_times,
                        "keys": rec.properties.get(Prop.KEYS), "body": rec.body[:80].decode("utf-8", "replace")})
        return out, total

    def waiting(self, group: str | None, level: int | None, start: int, limit: int) -> dict:
        live = _live(self.cores())
        rows, total = self._waiting(live, self._fresh(live), group, level, start, _limit(limit))
        return {"total": total, "start": start, "rows": rows}

    # -- pages ---------------------------------------------------------------------------------
    def clock(self) -> dict:
        clock = self.cores()[0].clock
        return {"virtual": bool(getattr(clock, "is_virtual", False)), "now_ms": clock.now_ms()}

    def search(self, text: str) -> dict:
        if not text.strip():
            raise ViewError(400, "q is the text to look for: a message id, an offset id, a key or a Pulsar "
                                 "message id")
        return {"query": text, "results": find_messages(self.cores(), text)}

    def message(self, ident: str) -> dict:
        if not ident.strip():
            raise ViewError(400, "id is a message id, an offset id or a Pulsar message id")
        cores = self.cores()
        found = message_life(cores, ident, self._fresh(_live(cores)))
        if found is None:
            raise ViewError(404, f"no running broker holds a message {ident.strip()!r} (a message id, an offset id or "
                                 f"a Pulsar message id; search by key with /api/search)")
        return found

    def consumers(self, dialect: str, query: str, start: int, limit: int) -> dict:
        _check_dialect(dialect)
        live = _live(self.cores())
        rows, total = consumer_rows(live, dialect, self._fresh(live), query, start, _limit(limit))
        return {"dialect": dialect, "query": query, "total": total, "start": start, "rows": rows}

    def group(self, name: str, dialect: str | None) -> dict:
        """``dialect`` None: the group's own (its first, 4.x when it has none yet)."""
        live = _live(self.cores())
        if not dialect:
            known = next((g for g in known_groups(live) if g["group"] == name), None)
            dialect = known["dialects"][0] if known and known["dialects"] else "4.x"
        _check_dialect(dialect)
        found = group_detail(live, name, dialect, self._fresh(live))
        if found is None:
            raise ViewError(404, f"no running broker knows a group {name!r}")
        if dialect == "5.x":
            found["lite_subscriptions"] = [{"broker": c.config.broker_name, "client_id": client, "topic": parent,
                                            "lite_topics": lites}
                                           for c in live for client, (parent, lites) in c.lite_subscriptions_of(name).items()]
        return found

    def bar(self, group: str, dialect: str, step: int | None, which: str, start: int, limit: int) -> dict:
        _check_dialect(dialect)
        if which not in ("waiting", "passed", "dead"):
            raise ViewError(400, "which is waiting, passed or dead")
        if which != "dead" and step is None:
            raise ViewError(400, "step is the bar's level, attempt or redelivery count (a number)")
        live = _live(self.cores())
        index_of = self._fresh(live)
        limit = _limit(limit)
        rows, total, skip = [], 0, start
        for core in live:
            _, n = core.retry_bar(index_of(core), group, dialect, step, which, 0, 0)
            if skip >= n:
                skip -= n
            elif len(rows) < limit:
                page, _ = core.retry_bar(index_of(core), group, dialect, step, which, skip, limit - len(rows))
                rows += page
                skip = 0
            total += n
        return {"group": group, "dialect": dialect, "step": step, "which": which, "total": total, "start": start,
                "rows": rows}

    def dead(self, group: str, start: int, limit: int) -> dict:
        live = _live(self.cores())
        limit = _limit(limit)
        rows, total, skip = [], 0, start
        for core in live:
            _, n = core.dead_letter_page(group, 0, 0)
            if skip >= n:
                skip -= n
            elif len(rows) < limit:
                page, _ = core.dead_letter_page(group, skip, limit - len(rows))
                rows += [_dead_row(core, group, d) for d in page]
                skip = 0
            total += n
        return {"group": group, "total": total, "start": start, "rows": rows}

    def topics(self, query: str, start: int, limit: int) -> dict:
        rows = []
        for core in self.cores():
            queues = core.stored_queues()
            for topic in sorted(queues):
                if topic == SCHEDULE_TOPIC or core.is_system_topic(topic) or core.is_lite_store_topic(topic) or \
                        query.lower() not in shown_topic(topic).lower():
                    continue
                rows.append({"broker": core.config.broker_name, "topic": shown_topic(topic),
                             "messages": core.stored_message_count(topic, queues),
                             "kind": "retry" if topic.startswith(RETRY_PREFIX) else
                             "dead letters" if topic.startswith(DLQ_PREFIX) else "business"})
        return {"total": len(rows), "start": start, "rows": rows[start:start + _limit(limit)]}

    def rates(self, seconds: int, group: str | None, topic: str | None) -> dict:
        """Per second of the broker's clock, the last ``seconds``: totals of each kind (of
        ``group`` and/or ``topic`` when given; a Pulsar topic by its full name or its store
        name) and the busiest topics (by the names their users know) and groups."""
        cores = self.cores()
        now = cores[0].clock.now_ms()
        seconds = max(1, min(seconds, min(c.rate_seconds for c in cores)))
        totals = {k: [0] * seconds for k in KINDS}
        by_topic: dict[str, Counter] = {}
        by_group: dict[str, Counter] = {}
        first = now // 1000 - seconds + 1
        shown: dict[str, str] = {}
        for core in _live(cores):
            start, series = core.rate_window(now, seconds)
            shift = start - first
            for (kind, g, t), counts in series.items():
                name = shown.get(t)
                if name is None:
                    name = shown[t] = shown_topic(t)
                if (group is not None and g != group) or (topic is not None and topic != t and topic != name):
                    continue
                row = totals[kind]
                for i, n in enumerate(counts):
                    if 0 <= i + shift < seconds:
                        row[i + shift] += n
                if t:
                    by_topic.setdefault(name, Counter())[kind] += sum(counts)
                if g:
                    by_group.setdefault(g, Counter())[kind] += sum(counts)
        # where the clock jumped (clock advance) within the window: the seconds it skipped
        jumps = sorted({j for core in _live(cores) for j in core.rate_jumps(first, now // 1000)})
        # the rates count from the broker's start (as its event log: both in memory), so the
        # seconds of the window before it are no lull either
        started = min((c.deliveries_since_ms for c in _live(cores)), default=None)
        return {"now_ms": now, "first_s": first, "seconds": seconds, "totals": totals,
                "jumps": [{"from_ms": a, "to_ms": b} for a, b in jumps], "started_ms": started,
                "by_topic": _busiest(by_topic, "topic"), "by_group": _busiest(by_group, "group")}


def _lite_census(live) -> dict:
    """Lite topics (RIP-83): each LITE topic's count of lite topics, each group's count of
    lite subscriptions, per broker."""
    topics, groups = [], []
    for core in live:
        parents, subs = core.lite_census()
        b = core.config.broker_name
        topics += [{"broker": b, "topic": t, "lite_topics": n} for t, n in sorted(parents.items())]
        groups += [{"broker": b, "group": g, "lite_subscriptions": n} for g, n in sorted(subs.items())]
    return {"topics": topics, "groups": groups}


def _busiest(table: dict[str, Counter], name: str, n: int = 20) -> list[dict]:
    rows = [{name: k, **{kind: c.get(kind, 0) for kind in KINDS}} for k, c in table.items()]
    rows.sort(key=lambda r: (-sum(r[k] for k in KINDS), r[name]))
    return rows[:n]


def _check_dialect(dialect: str) -> None:
    if dialect not in DIALECTS:
        raise ViewError(400, f"dialect is one of {', '.join(DIALECTS)}, not {dialect!r}")


def _limit(limit: int) -> int:
    return max(0, min(limit, MAX_PAGE))


def _dead_row(core, group: str, d) -> dict:
    return {"broker": core.config.broker_name, "group": group, "msg_id": d.msg_id,
            "offset_msg_id": d.offset_msg_id, "keys": d.keys, "topic": d.original_topic,
            "attempts": d.attempts,
            "died_at_ms": d.died_at_ms, "redriven_as": d.redriven_as, "body_size": d.body_size}


def _level_stream(core, rank: int, index, level: int, group: str | None):
    """(due, level, broker's rank, offset, core) of a level's waiting entries, in queue
    (= due) order: the first four order the merge of levels and brokers."""
    col = index.column(SCHEDULE_TOPIC, level - 1)
    if col is None:
        return
    start = index.delivered(level)
    for off in range(start, col.end):
        if group is None or col.groups[off - col.base] == group:
            entry = core.queue_entry(SCHEDULE_TOPIC, level - 1, off)
            if entry is not None:
                yield entry[2], level, rank, off, core


def _islice(it, start: int, stop: int):
    for i, x in enumerate(it):
        if i >= stop:
            return
        if i >= start:
            yield x


def dashboard_state(cores: list, views: DashboardViews | None = None) -> dict:
    """The overview of ``cores`` (a views object keeps its indexes between calls)."""
    return (views or DashboardViews(lambda: cores)).state()


class EventFeed:
    """The newest ``size`` retry-lifecycle events and applied faults of every broker,
    numbered: the page asks for those after the last number it saw (``after``). A fault
    names its rule (``rule``, ``action``, ``operation``) instead of a message id."""

    def __init__(self, cores: list, size: int = 500) -> None:
        self.size = size
        self._events: deque = deque(maxlen=size)
        self._seq = 0
        self._stops = [core.subscribe_events(self._taker(core.config.broker_name), kinds=FEED_KINDS)
                       for core in cores]

    def _taker(self, broker: str):
        def take(event) -> None:
            self._seq += 1
            doc = {"seq": self._seq, "broker": broker, **event.to_json()}
            for key in ("topic", "real_topic"):         # as its users name it (persistent://...)
                if key in doc:
                    doc[key] = shown_topic(doc[key])
            if event.kind == EventKind.FAULT:           # its rule, not a message id: {"rule", "action", "operation"}
                doc.pop("msg_id", None)
                doc.update(fault_of(event) or {})
            self._events.append(doc)
        return take

    def after(self, seq: int, limit: int = 100) -> list[dict]:
        return [e for e in self._events if e["seq"] > seq][-limit:]

    def close(self) -> None:
        for stop in self._stops:
            stop()

