"""``topic list|show|delete`` and ``group list|show``: the reads mqadmin does (topicList,
topicStatus, deleteTopic, consumerProgress), over the same request codes, with readable
tables and ``--json``. Broker addresses come from the name server, as mqadmin finds them."""
from __future__ import annotations

import json

from ..pulsar_model.names import shown_topic
from .common import shown

__all__ = ["add_topic_views", "add_group_views", "run_view"]


def add_topic_views(sub, add_server_options) -> None:
    ls = sub.add_parser("list", help="every topic the name server knows (mqadmin topicList)")
    show = sub.add_parser("show", help="TOPIC's queues on each broker: min, max, last store (mqadmin topicStatus); "
                                       "its 5.x message type and the half messages of transactions waiting")
    show.add_argument("topic", help="the topic to show (a Pulsar topic by its Pulsar name too)")
    delete = sub.add_parser("delete", help="delete TOPIC from every broker (mqadmin deleteTopic)")
    delete.add_argument("topic", help="the topic to delete (a Pulsar topic by its Pulsar name too)")
    for q in (ls, show, delete):
        q.add_argument("--json", action="store_true", help="one JSON document instead of the table")
        add_server_options(q, 10.0)


def add_group_views(sub, add_server_options) -> None:
    ls = sub.add_parser("list", help="every consumer group of the brokers, 4.x and 5.x groups and Pulsar "
                                     "subscriptions, each with the dialect of the clients using it")
    show = sub.add_parser("show", help="GROUP's progress per queue: broker offset, committed, lag; its retries, "
                                       "dead letters and the half messages of transactions waiting in its topics "
                                       "(mqadmin consumerProgress)")
    show.add_argument("group", help="the consumer group to show (a Pulsar subscription too)")
    show.add_argument("--topic", default=None, help="only this topic (default: every topic it has offsets for)")
    for q in (ls, show):
        q.add_argument("--json", action="store_true", help="one JSON document instead of the table")
        add_server_options(q, 10.0)


def _request(code, fields=None):
    from ..fronts.remoting.protocol import RemotingCommand

    return RemotingCommand.request(code, fields or {})


def queue_rows(body: bytes) -> list[dict]:
    """A TopicStatsTable / ConsumeStats offsetTable as rows, their fields in the CLI's
    snake_case (minOffset -> min_offset, brokerOffset -> broker_offset)."""
    from ..fronts.remoting.protocol.fastjson import queue_table
    from .common import snake_case

    return [{"topic": t, "broker": b, "queue_id": q, **{snake_case(k): v for k, v in value.items()}}
            for (t, b, q), value in queue_table(body)]


def run_view(kind: str, args) -> int:
    from .remote import call_server
    from .brokers import broker_addresses
    from ..fronts.remoting.protocol import RequestCode as RQ

    command = f"{kind} {args.action}"
    def call(server, code, fields=None, refused=1, accept=()):
        return call_server(command, server, _request(code, fields), args.timeout, refused_exit=refused,
                            accept=accept)
    if kind == "topic" and args.action == "list":
        reply = call(args.server, RQ.GET_ALL_TOPIC_LIST_FROM_NAMESERVER)
        if isinstance(reply, int):
            return reply
        topics = [shown_topic(t) for t in json.loads(reply.body)["topicList"]]
        print(json.dumps(topics, indent=2) if args.json else "\n".join(shown(t) for t in topics))
        return 0
    if args.action in ("show", "delete"):
        from .names import check_group, resolve_topic

        missing = check_group(command, args.server, args.timeout, args.group) if kind == "group" else None
        if missing is not None:
            return missing
        if args.topic is not None:      # TOPIC, or group show's --topic: the store's name from here on
            topic = resolve_topic(command, args.server, args.timeout, args.topic)
            if isinstance(topic, int):
                return topic
            args.topic = topic
    brokers = broker_addresses(command, args.server, args.timeout)
    if isinstance(brokers, int):
        return brokers
    if kind == "topic" and args.action == "delete":
        deleted = []
        for name, address in brokers.items():
            reply = call(address, RQ.DELETE_TOPIC_IN_BROKER, {"topic": args.topic}, refused=2)
            if isinstance(reply, int):
                return reply
            deleted.append(name)
        call(args.server, RQ.DELETE_TOPIC_IN_NAMESRV, {"topic": args.topic})
        name = shown_topic(args.topic)
        print(json.dumps({"topic": name, "deleted_on": deleted}) if args.json
              else f"topic {shown(name)} deleted on {shown(', '.join(deleted))}")
        return 0
    if kind == "topic":         # show
        rows = []
        for name, address in brokers.items():
            reply = call(address, RQ.GET_TOPIC_STATS_INFO, {"topic": args.topic}, refused=2)
            if isinstance(reply, int):
                return reply
            rows += [dict(r, topic=shown_topic(r["topic"])) for r in queue_rows(reply.body)]
        state = _transactions(args.server, call, args.topic)
        if isinstance(state, int):
            return state
        half = state["half_messages"]
        for r in rows:      # each queue: its half messages waiting (none from a server that cannot say)
            r["half_messages"] = sum(1 for h in half if (h["broker"], h["queue_id"]) == (r["broker"], r["queue_id"]))
        if args.json:
            print(json.dumps(rows, indent=2))
            return 0
        from .common import iso_utc

        print(f"{'BROKER':<10} {'QUEUE':>5} {'MIN':>10} {'MAX':>10} {'HALF':>6}  LAST STORE (UTC)")
        for r in rows:
            last = iso_utc(r["last_update_timestamp"]) if r["last_update_timestamp"] else "-"
            print(f"{shown(r['broker']):<10} {r['queue_id']:>5} {r['min_offset']:>10} {r['max_offset']:>10} "
                  f"{r['half_messages']:>6}  {last}")
        if state["message_type"]:
            print(f"message type: {shown(state['message_type'])} (5.x routes accept only it)")
        lite = _lite(args.server, call, topic=args.topic) if state["message_type"] == "LITE" else {}
        if isinstance(lite, int):
            return lite
        lite = lite.get("lite_topics", [])
        if lite:
            print(f"lite topics: {len(lite)}")
            for t in lite:
                print(f"  {shown(t['lite_topic'])}  last write {iso_utc(t['last_write_ms'])}")
        if half:
            print(f"half messages waiting for their producer's commit or rollback: {len(half)}")
            print(f"  {'TRANSACTION ID':<34} {'PRODUCER GROUP':<20} {'CHECKS':>6}  NEXT CHECK (UTC)")
            for h in half:
                print(f"  {shown(h['transaction_id']):<34} {shown(h['producer_group']):<20} {h['checks']:>6}  "
                      f"{iso_utc(h['next_check_ms'])}")
        return 0
    if args.action == "list":
        return _group_list(args, command)
    return _group_show(args, brokers, call)


def _group_list(args, command: str) -> int:
    """Every group of every dialect (EMULATOR_GROUPS): 4.x, 5.x, Pulsar subscriptions."""
    from .names import known_group_rows

    rows = known_group_rows(command, args.server, args.timeout)
    if isinstance(rows, int):
        return rows
    rows = [dict(r, topics=[shown_topic(t) for t in r["topics"]]) for r in rows]
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    names = [shown(r["group"]) for r in rows]
    width = max([len("GROUP")] + [len(n) for n in names])
    print(f"{'GROUP':<{width}}  {'DIALECT':<12}  TOPICS")
    for name, r in zip(names, rows):
        print(f"{name:<{width}}  {','.join(r['dialects']) or '-':<12}  {shown(', '.join(r['topics']), None)}")
    return 0


def _group_show(args, brokers: dict, call) -> int:
    from ..fronts.remoting.protocol import RequestCode as RQ, ResponseCode as RC

    fields = {"consumerGroup": args.group, **({"topic": args.topic} if args.topic else {})}
    rows, retries, dead = [], 0, 0
    for name, address in brokers.items():
        reply = call(address, RQ.GET_CONSUME_STATS, fields, refused=2)
        if isinstance(reply, int):
            return reply
        rows += [dict(r, lag=max(r["broker_offset"] - r["consumer_offset"], 0)) for r in queue_rows(reply.body)]
        for topic in (f"%RETRY%{args.group}", f"%DLQ%{args.group}"):
            stats = call(address, RQ.GET_TOPIC_STATS_INFO, {"topic": topic}, accept=(RC.TOPIC_NOT_EXIST,))
            if isinstance(stats, int):
                return stats
            found = queue_rows(stats.body) if stats.code == RC.SUCCESS else []
            count = sum(r["max_offset"] - r["min_offset"] for r in found)
            if topic.startswith("%RETRY%"):
                retries += count
            else:
                dead += count
    counted = _counted_dead_letters(args.server, call, args.group)
    if isinstance(counted, int):
        return counted
    dead = counted.get("dead_letters", dead)
    business = [dict(r, topic=shown_topic(r["topic"])) for r in rows if not r["topic"].startswith("%RETRY%")]
    state = _transactions(args.server, call, None)
    if isinstance(state, int):
        return state
    topics = {r["topic"] for r in rows}
    half = sum(1 for h in state["half_messages"] if h["topic"] in topics)
    lite = _lite(args.server, call, group=args.group)
    if isinstance(lite, int):
        return lite
    lite = lite.get("lite_subscriptions", [])
    if not rows and not dead and not args.json:
        # a group the brokers know (checked before) that nothing has consumed yet
        print(f"group {shown(args.group)} has no offsets and no dead letters yet")
        _print_lite_subscriptions(lite)
        return 0
    doc = {"group": args.group, "queues": business, "lag": sum(r["lag"] for r in business),
           "retry_messages": retries, "dead_letters": dead, "half_messages": half, "lite_subscriptions": lite}
    if args.json:
        print(json.dumps(doc, indent=2))
        return 0
    # columns as wide as their longest value: a long (Pulsar) topic or broker name keeps them straight
    cells = [(shown(r["topic"]), shown(r["broker"])) for r in business]
    tw = max([24] + [len(t) for t, _ in cells])
    bw = max([10] + [len(b) for _, b in cells])
    print(f"{'TOPIC':<{tw}} {'BROKER':<{bw}} {'QUEUE':>5} {'BROKER OFFSET':>14} {'COMMITTED':>10} {'LAG':>8}")
    for (topic, broker), r in zip(cells, business):
        print(f"{topic:<{tw}} {broker:<{bw}} {r['queue_id']:>5} {r['broker_offset']:>14} "
              f"{r['consumer_offset']:>10} {r['lag']:>8}")
    print(f"lag {doc['lag']}; messages through %RETRY%{shown(args.group)}: {retries}; dead letters: {dead}; "
          f"half messages waiting in its topics: {half}")
    _print_lite_subscriptions(lite)
    return 0


def _print_lite_subscriptions(subs: list[dict]) -> None:
    """group show's view of a group's lite consumers: each client, its bound topic and
    the lite topics it subscribed to."""
    if not subs:
        return
    print(f"lite subscriptions: {sum(len(s['lite_topics']) for s in subs)} of {len(subs)} lite consumer(s)")
    for s in subs:
        names = ", ".join(s["lite_topics"]) or "(none)"
        print(f"  {shown(s['client_id'])}  {shown(s['topic'])}: {shown(names, None)}")


def _lite(server: str, call, **which) -> dict | int:
    """EMULATOR_LITE: a LITE topic's lite topics (``topic=``) or a group's lite
    subscriptions (``group=``); nothing from a server without that request."""
    from ..fronts.remoting.protocol import EMULATOR_LITE, ResponseCode as RC

    fields = {"topic": which["topic"]} if "topic" in which else {"consumerGroup": which["group"]}
    reply = call(server, EMULATOR_LITE, fields, accept=(RC.REQUEST_CODE_NOT_SUPPORTED,))
    if isinstance(reply, int):
        return reply
    return json.loads(reply.body) if reply.code == RC.SUCCESS else {}


def _counted_dead_letters(server: str, call, group: str) -> dict | int:
    """EMULATOR_DLQ count: ``group``'s dead letters counted as `dlq list` lists them and the
    dashboard counts them (a Pulsar subscription's -DLQ topics too); nothing from a server
    without that request (a real RocketMQ: its %DLQ% topic's stats say it)."""
    from ..fronts.remoting.protocol import EMULATOR_DLQ, ResponseCode as RC

    reply = call(server, EMULATOR_DLQ, {"action": "count", "consumerGroup": group},
                 accept=(RC.REQUEST_CODE_NOT_SUPPORTED,))
    if isinstance(reply, int):
        return reply
    return json.loads(reply.body) if reply.code == RC.SUCCESS else {}


def _transactions(server: str, call, topic: str | None) -> dict | int:
    """EMULATOR_TRANSACTIONS: the half messages waiting (of ``topic``) and its message
    type; nothing from a server without that request (a real RocketMQ)."""
    from ..fronts.remoting.protocol import EMULATOR_TRANSACTIONS, ResponseCode as RC

    reply = call(server, EMULATOR_TRANSACTIONS, {"topic": topic} if topic else {},
                 accept=(RC.REQUEST_CODE_NOT_SUPPORTED,))
    if isinstance(reply, int):
        return reply
    if reply.code != RC.SUCCESS:
        return {"half_messages": [], "message_type": None}
    return json.loads(reply.body)
