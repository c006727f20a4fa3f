"""The consumers of each dialect as the dashboard lists them, a page at a time, and one
group in detail (sans-I/O, read-only, over the running brokers of a server):

  4.x     a group: its topics, lag and committed offset per queue, its online clients
          (client id, address, language and version from their heartbeats), retries
          waiting, dead letters
  5.x     a group: its topics, messages invisible now (in flight) by delivery attempt,
          retry copies waiting, whether it is FIFO and which message groups are blocked
          behind a message that failed (retried in place), dead letters
  pulsar  a subscription (a group reading one topic): type, consumers, backlog, unacked,
          redelivery counts of the messages not acknowledged, delayed messages, dead
          letters

Which dialect a group belongs to is group_views.py's answer. Cost per page: one pass
over the groups, offsets and subscriptions to list and count, then the rows of the page.
"""
from __future__ import annotations

from collections import Counter

from rocketmq_emulator.store.records import RETRY_PREFIX

from ..rocketmq_model.dead_letters import dead_letter_counts
from .group_views import known_groups
from ..rocketmq_model.invisible_time import SHARDING_KEY
from ..pulsar_model.names import shown_topic, subscription_of
from .retry_ladders import ladder

__all__ = ["consumer_rows", "group_detail", "merge_ladders", "DIALECTS"]

DIALECTS = ("4.x", "5.x", "pulsar")
_FLIGHT_SHOWN = 100


def _live(cores) -> list:
    return [c for c in cores if not c.stopped]


def _matches(query: str, *names: str) -> bool:
    q = query.lower()
    return not q or any(q in (n or "").lower() for n in names)


def consumer_rows(cores, dialect: str, index_of, query: str = "", start: int = 0,
                  limit: int = 50) -> tuple[list[dict], int]:
    """(the rows of one page, how many rows match ``query``) of ``dialect``'s consumers,
    sorted by name. ``index_of(core)``: its retry_ladders.RetryIndex, refreshed."""
    live = _live(cores)
    if dialect == "pulsar":
        subs = sorted((s for c in live for s in _subscriptions(c)),
                      key=lambda s: (s["subscription"], s["topic"], s["broker"]))
        subs = [s for s in subs if _matches(query, s["subscription"], s["topic"])]
        page = subs[start:start + limit]
        dead = _dead(live)
        for s in page:
            s["dead_letters"] = dead.get(s["group"], 0)
        return page, len(subs)
    groups = [dict(g, topics=[shown_topic(t) for t in g["topics"]]) for g in known_groups(live)
              if dialect in g["dialects"]]
    groups = [g for g in groups if _matches(query, g["group"], *g["topics"])]
    page = groups[start:start + limit]
    if not page:
        return [], len(groups)
    dead = _dead(live)
    progress = _progress(live)
    rows = []
    for g in page:
        name = g["group"]
        row = {"group": name, "topics": g["topics"], "dialects": g["dialects"],
               "dead_letters": dead.get(name, 0),
               **_lag(progress.get(name, []))}
        if dialect == "4.x":
            row.update(_four(live, name, index_of))
        else:
            row.update(_five(live, name, index_of))
        rows.append(row)
    return rows, len(groups)


def _dead(live) -> dict[str, int]:
    out: Counter = Counter()
    for core in live:
        out.update(dead_letter_counts(core))
    return out


def _progress(live) -> dict[str, list[dict]]:
    """group -> its queues: {broker, topic, queue_id, committed, max, lag}."""
    out: dict[str, list[dict]] = {}
    for core in live:
        store = core.store
        for key, offsets in store.offset_table().items():
            topic, _, group = key.rpartition("@")
            for qid, committed in sorted(offsets.items()):
                top = store.max_offset(topic, int(qid))
                out.setdefault(group, []).append({"broker": core.config.broker_name, "topic": shown_topic(topic),
                                                  "queue_id": int(qid), "committed": committed, "max": top,
                                                  "lag": max(top - max(committed, 0), 0)})
    return out


def _lag(queues: list[dict]) -> dict:
    business = [q for q in queues if not q["topic"].startswith(RETRY_PREFIX)]
    return {"lag": sum(q["lag"] for q in business), "consumed": sum(max(q["committed"], 0) for q in business),
            "retry_lag": sum(q["lag"] for q in queues if q["topic"].startswith(RETRY_PREFIX))}


def _four(live, group: str, index_of) -> dict:
    clients, waiting = [], 0
    for core in live:
        info = core.consumers.get(group)
        if info is not None:
            for ch, client_id in sorted(info.channels.items(), key=lambda kv: kv[1]):
                clients.append({"client_id": client_id, "address": ch.remote, "language": ch.language,
                                "version": ch.version, "broker": core.config.broker_name})
        index = index_of(core)
        waiting += sum(index.waiting.get(level, {}).get(group, 0) for level in index.waiting)
    info = next((c.consumers.get(group) for c in live if c.consumers.get(group) is not None), None)
    return {"clients": clients, "retry_waiting": waiting,
            "consume_type": info.consume_type if info else None, "message_model": info.message_model if info else None}


def _five(live, group: str, index_of) -> dict:
    attempts: Counter = Counter()
    invisible, blocked, waiting = 0, [], 0
    fifo = False
    for core in live:
        gc = core.groups.table.get(group)
        fifo = fifo or bool(gc is not None and gc.consume_message_orderly)
        index = index_of(core)
        for s in core.pops.queue_states(group):
            col = index.column(s["topic"], s["queue_id"]) if s["topic"].startswith(RETRY_PREFIX) else None
            for off in s["in_flight"]:
                invisible += 1
                if col is not None and col.base <= off < col.end:
                    attempts[col.times[off - col.base] + 1] += 1
                else:
                    attempts[s["deliveries"].get(off, 1) if s["fifo"] else 1] += 1
            if s["fifo"]:
                blocked += _blocked(core, s)
        waiting += sum(st["waiting"] for st in ladder(core, index, group, "5.x", 0)["steps"])
    return {"fifo": fifo, "invisible": invisible, "attempts": {str(k): v for k, v in sorted(attempts.items())},
            "retry_waiting": waiting, "blocked": blocked, "blocked_count": len(blocked)}


def _blocked(core, s: dict) -> list[dict]:
    """A FIFO queue's message groups waiting behind a message that failed (retried in
    place): the message, its deliveries so far, when it is visible again."""
    out = []
    for off, n in sorted(s["deliveries"].items()):
        flight = s["in_flight"].get(off)
        if n < 2 and flight is not None:
            continue                    # its first delivery, in flight: nothing failed yet
        rec = core.store.record_at(s["topic"], s["queue_id"], off)
        if rec is None:
            continue
        out.append({"message_group": rec.properties.get(SHARDING_KEY, ""), "broker": core.config.broker_name,
                    "topic": shown_topic(s["topic"]), "queue_id": s["queue_id"], "queue_offset": off, "deliveries": n,
                    "msg_id": rec.properties.get("UNIQ_KEY") or rec.offset_msg_id,
                    "visible_at_ms": flight[0] if flight else None})
    return out


def _subscriptions(core) -> list[dict]:
    out = []
    for s in core.subscriptions.describe():
        counts = Counter(n for off, n in s["redeliveries"].items()
                         if off >= s["mark_delete"] and off not in s["acked"])
        out.append({"group": s["group"], "subscription": subscription_of(s["group"]),
                    "topic": shown_topic(s["topic"]), "store_topic": s["topic"],
                    "broker": core.config.broker_name, "type": s["type"], "consumers": s["consumers"],
                    "backlog": s["backlog"], "unacked": s["unacked"], "delayed": s["delayed"],
                    "redelivery_counts": {str(k): v for k, v in sorted(counts.items())},
                    "reached": {str(k): v for k, v in sorted(s["reached"].items())}})
    return out


def merge_ladders(ladders: list[dict]) -> dict | None:
    """One ladder from each broker's of one group (steps added up)."""
    if not ladders:
        return None
    out = dict(ladders[0], steps=[dict(s) for s in ladders[0]["steps"]])
    for other in ladders[1:]:
        by_step = {s["step"]: s for s in out["steps"]}
        for s in other["steps"]:
            mine = by_step.get(s["step"])
            if mine is None:
                out["steps"].append(dict(s))
                continue
            for k in ("waiting", "passed", "retry_letters"):
                if k in s:
                    mine[k] = mine.get(k, 0) + s[k]
            dues = [d for d in (mine.get("next_due_ms"), s.get("next_due_ms")) if d is not None]
            if "next_due_ms" in mine:
                mine["next_due_ms"] = min(dues) if dues else None
        out["dead_lettered"] += other["dead_lettered"]
    out["steps"].sort(key=lambda s: s["step"])
    return out


def group_detail(cores, group: str, dialect: str, index_of) -> dict | None:
    """One group (a Pulsar subscription: every topic it reads) in detail: its ladder
    (added up over the brokers), its queues, and its dialect's own figures; None when no
    running broker knows it."""
    live = _live(cores)
    known = next((g for g in known_groups(live) if g["group"] == group), None)
    if known is None:
        return None
    dead = _dead(live)
    ladders = [ladder(core, index_of(core), group, dialect, dead_letter_counts(core).get(group, 0)) for core in live]
    queues = _progress(live).get(group, [])
    out = {"group": group, "dialect": dialect, "dialects": known["dialects"],
           "topics": [shown_topic(t) for t in known["topics"]],
           "dead_letters": dead.get(group, 0), "ladder": merge_ladders(ladders), "queues": queues, **_lag(queues)}
    if dialect == "4.x":
        out.update(_four(live, group, index_of))
    elif dialect == "5.x":
        out.update(_five(live, group, index_of))
        flight = []
        for core in live:
            for s in core.pops.queue_states(group):
                for off, (visible_at, renewed) in sorted(s["in_flight"].items())[:_FLIGHT_SHOWN]:
                    rec = core.store.record_at(s["topic"], s["queue_id"], off)
                    if rec is not None:
                        flight.append({"msg_id": rec.properties.get("UNIQ_KEY") or rec.offset_msg_id,
                                       "topic": shown_topic(s["topic"]), "queue_id": s["queue_id"],
                                       "queue_offset": off,
                                       "visible_at_ms": visible_at, "renewed": renewed,
                                       "broker": core.config.broker_name})
        out["in_flight"] = flight[:_FLIGHT_SHOWN]
    else:
        out["subscriptions"] = [s for core in live for s in _subscriptions(core) if s["group"] == group]
    return out
