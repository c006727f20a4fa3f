"""``rocketmq-emulator offset reset GROUP TOPIC --to earliest|latest|TIME``: mqadmin
resetOffsetByTime. Each broker is asked with INVOKE_BROKER_TO_RESET_OFFSET (222): the
group's online consumers are told (RESET_CONSUMER_CLIENT_OFFSET) and move there. With
no consumer online the broker says CONSUMER_NOT_ONLINE, and the offsets are set here
queue by queue (SEARCH_OFFSET_BY_TIMESTAMP / the queue's ends, then
UPDATE_CONSUMER_OFFSET), as mqadmin's fallback does."""
from __future__ import annotations

import datetime
import json

from .common import LONG_MAX, CommandParser, UsageError, quoted, shown, whole_number

__all__ = ["offset_main"]


def _when(text: str) -> int:
    """earliest → 0, latest → -1, an ISO 8601 time (UTC unless it says) or epoch ms."""
    if text == "earliest":
        return 0
    if text == "latest":
        return -1
    ms = whole_number(text) if text.isdigit() else None
    if ms is not None and ms <= LONG_MAX:          # (the request's timestamp is a Java long)
        return ms
    try:
        t = datetime.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise UsageError(f"rocketmq-emulator offset reset: error: --to takes earliest, latest, an ISO time "
                         f"(2024-01-01T10:00:00Z) or epoch ms from 0 to {LONG_MAX}, not {quoted(text)}") from None
    if t.tzinfo is None:
        t = t.replace(tzinfo=datetime.timezone.utc)
    return int(t.timestamp() * 1000)


def offset_main(argv: list[str]) -> int:
    from .common import usage_error
    from .remote import add_server_options, call_server
    from .brokers import broker_addresses
    from .views import queue_rows
    from ..fronts.remoting.protocol import RemotingCommand, RequestCode as RQ, ResponseCode as RC

    p = CommandParser(prog="rocketmq-emulator offset", description="Move a consumer group's offsets.")
    sub = p.add_subparsers(dest="action", required=True, metavar="{reset}")
    reset = sub.add_parser("reset", help="move GROUP's offsets of TOPIC to a time (mqadmin resetOffsetByTime)")
    reset.add_argument("group", help="the consumer group whose offsets move")
    reset.add_argument("topic", help="the topic whose queues' offsets move (a Pulsar topic by its Pulsar name too)")
    reset.add_argument("--to", required=True, metavar="earliest|latest|TIME",
                       help="earliest, latest, an ISO 8601 time (UTC unless it says: 2024-01-01T10:00:00Z) or "
                            "epoch milliseconds")
    reset.add_argument("--json", action="store_true", help="one JSON document instead of lines")
    add_server_options(reset, 10.0)
    try:
        args = p.parse_args(argv)
        timestamp = _when(args.to)
    except UsageError as exc:
        return usage_error(exc)
    command = "offset reset"
    from .names import check_group, resolve_topic

    missing = check_group(command, args.server, args.timeout, args.group)
    if missing is not None:
        return missing
    topic = resolve_topic(command, args.server, args.timeout, args.topic)     # the store's name
    if isinstance(topic, int):
        return topic
    brokers = broker_addresses(command, args.server, args.timeout)
    if isinstance(brokers, int):
        return brokers
    rows = []
    for name, address in brokers.items():
        ask = RemotingCommand.request(RQ.INVOKE_BROKER_TO_RESET_OFFSET, {
            "topic": topic, "group": args.group, "timestamp": timestamp, "isForce": True})
        reply = call_server(command, address, ask, args.timeout, refused_exit=2, accept=(RC.CONSUMER_NOT_ONLINE,))
        if isinstance(reply, int):
            return reply
        if reply.code == RC.SUCCESS:
            rows += [dict(r, broker=name, how="consumers told") for r in _offset_rows(reply.body)]
            continue
        stats = call_server(command, address, RemotingCommand.request(RQ.GET_TOPIC_STATS_INFO, {"topic": topic}),
                             args.timeout, refused_exit=2)
        if isinstance(stats, int):
            return stats
        for q in queue_rows(stats.body):
            if timestamp == 0:
                offset = q["min_offset"]
            elif timestamp == -1:
                offset = q["max_offset"]
            else:
                found = call_server(command, address, RemotingCommand.request(RQ.SEARCH_OFFSET_BY_TIMESTAMP, {
                    "topic": topic, "queueId": q["queue_id"], "timestamp": timestamp}), args.timeout)
                if isinstance(found, int):
                    return found
                offset = int(found.header("offset"))
            done = call_server(command, address, RemotingCommand.request(RQ.UPDATE_CONSUMER_OFFSET, {
                "consumerGroup": args.group, "topic": topic, "queueId": q["queue_id"], "commitOffset": offset}),
                args.timeout, refused_exit=2)
            if isinstance(done, int):
                return done
            rows.append({"broker": name, "queue_id": q["queue_id"], "offset": offset, "how": "set on the broker"})
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    for r in rows:
        print(f"{shown(r['broker'])} queue {r['queue_id']}: offset {r['offset']} ({r['how']})")
    return 0


def _offset_rows(body: bytes) -> list[dict]:
    from ..fronts.remoting.protocol.fastjson import queue_table

    return [{"queue_id": q, "offset": int(offset)} for (_, _, q), offset in queue_table(body)]
