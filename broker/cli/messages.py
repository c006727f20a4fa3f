"""``message show ID``, ``message find --topic T --key K``, ``message send TOPIC BODY``
and ``status``: what mqadmin's queryMsgById / queryMsgByKey / sendMessage / brokerStatus
do, over the same requests (VIEW_MESSAGE_BY_ID to the broker an offsetMsgId names,
QUERY_MESSAGE to every broker, SEND_MESSAGE_V2 to a writable queue of the route,
GET_BROKER_RUNTIME_INFO)."""
from __future__ import annotations

import itertools
import json

from ..pulsar_model.names import shown_topic
from ..rocketmq_model.message_types import LITE_TOPIC_PROPERTY
from ..rocketmq_model.priorities import priority_of
from .common import CommandParser, UsageError, fail, int_in_range, iso_utc, shown

__all__ = ["message_main", "status_main", "record_view"]

_SEND = itertools.count()


def record_view(rec) -> dict:
    """One stored message as the CLI shows it (its topic as its users name it: a Pulsar
    topic by its Pulsar name)."""
    body = rec.body
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        text = None
    return {"msg_id": rec.properties.get("UNIQ_KEY") or rec.offset_msg_id, "offset_msg_id": rec.offset_msg_id,
            "topic": shown_topic(rec.topic), "queue_id": rec.queue_id, "queue_offset": rec.queue_offset,
            "tags": rec.tags, "keys": rec.keys, "reconsume_times": rec.reconsume_times,
            "store_timestamp": rec.store_timestamp, "born_timestamp": rec.born_timestamp,
            "priority": priority_of(rec.properties), "lite_topic": rec.properties.get(LITE_TOPIC_PROPERTY),
            "properties": dict(rec.properties), "body_size": len(body),
            "body": text if text is not None else body.hex(), "body_encoding": "utf-8" if text is not None else "hex"}


def _print_message(view: dict) -> None:
    for k in ("msg_id", "offset_msg_id", "topic", "queue_id", "queue_offset", "tags", "keys", "reconsume_times"):
        print(f"{k:<16} {shown(str(view[k]))}")
    if view.get("priority") is not None:
        print(f"{'priority':<16} {view['priority']} (0..9, larger first)")
    if view.get("lite_topic") is not None:
        print(f"{'lite topic':<16} {shown(view['lite_topic'])}")
    # two clocks: born is the producer's (a real client's wall clock), stored the broker's
    print(f"{'born':<16} {iso_utc(view['born_timestamp'])} (the producer's clock)")
    print(f"{'stored':<16} {iso_utc(view['store_timestamp'])} (the broker's clock)")
    print(f"{'properties':<16} {json.dumps(view['properties'], sort_keys=True)}")     # (JSON escapes controls)
    print(f"{'body':<16} {shown(view['body'], None)}" + (" (hex)" if view["body_encoding"] == "hex" else ""))


def message_main(argv: list[str]) -> int:
    from .common import usage_error
    from .remote import add_server_options

    p = CommandParser(prog="rocketmq-emulator message", description="Look messages up, or send one.")
    sub = p.add_subparsers(dest="action", required=True, metavar="{show,find,send}")
    show = sub.add_parser("show", help="the message with this id: a message id (UNIQ_KEY) or an offsetMsgId "
                                       "(mqadmin queryMsgById)")
    show.add_argument("id", help="the message id (UNIQ_KEY, what `message send` and consumers show) or the "
                                 "offsetMsgId of one stored copy")
    show.add_argument("--topic", default=None, help="look the message id up in this topic only (default: every "
                                                    "topic)")
    find = sub.add_parser("find", help="messages of TOPIC with KEY in KEYS or as UNIQ_KEY (mqadmin queryMsgByKey)")
    find.add_argument("--topic", required=True,
                      help="the topic to look in (a Pulsar topic by its Pulsar name too)")
    find.add_argument("--key", required=True, help="a word of the messages' KEYS, or a message id (UNIQ_KEY)")
    find.add_argument("--max", type=int_in_range(1, 1000), default=64, help="at most this many (default 64)")
    send = sub.add_parser("send", help="send BODY to TOPIC (mqadmin sendMessage)")
    send.add_argument("topic", help="the topic to send to (a writable queue of its route is picked)")
    send.add_argument("body", help="the message body, as text (UTF-8)")
    send.add_argument("--tag", default=None, help="the message's tag (TAGS; default: none)")
    send.add_argument("--key", default=None, help="the message's key (KEYS; default: none)")
    send.add_argument("--delay-level", type=int_in_range(1, 99), default=None,
                      help="deliver it after this delay level (3: 10 s with the default table; default: at once)")
    for q in (show, find, send):
        q.add_argument("--json", action="store_true", help="JSON instead of lines")
        add_server_options(q, 10.0)
    try:
        args = p.parse_args(argv)
    except UsageError as exc:
        return usage_error(exc)
    return {"show": _show, "find": _find, "send": _send}[args.action](args)


def _show(args) -> int:
    """As mqadmin queryMsgById: the offsetMsgId of a broker here is read at its offset;
    any other id is looked up as a message id (UNIQ_KEY) in every topic of every broker
    (protocol.message_ids)."""
    from rocketmq_emulator.store.records import decode_record, iter_records

    from .remote import call_server, call_server_many
    from .brokers import broker_addresses
    from ..fronts.remoting.protocol import RemotingCommand, RequestCode as RQ, ResponseCode as RC
    from ..fronts.remoting.protocol.message_ids import not_found_text, offset_id_target, original_and_copies, unique_key_query
    from .names import known_topics, resolve_topic

    command, msg_id = "message show", args.id.strip()
    topic = resolve_topic(command, args.server, args.timeout, args.topic) if args.topic else None
    if isinstance(topic, int):
        return topic
    brokers = broker_addresses(command, args.server, args.timeout)
    if isinstance(brokers, int):
        return brokers
    target = offset_id_target(msg_id, brokers)
    if target is not None:
        name, offset = target
        reply = call_server(command, brokers[name], RemotingCommand.request(RQ.VIEW_MESSAGE_BY_ID, {"offset": offset}),
                             args.timeout, refused_exit=2, accept=(RC.SYSTEM_ERROR,))
        if isinstance(reply, int):
            return reply
        if reply.code == RC.SUCCESS:
            return _print_shown(args, decode_record(reply.body, check_crc=False), [])
    topics = [topic] if topic else known_topics(command, args.server, args.timeout)
    if isinstance(topics, int):
        return topics
    found = []
    for address in brokers.values():
        replies = call_server_many(command, address, [unique_key_query(t, msg_id) for t in topics], args.timeout,
                                    refused_exit=2, accept=(RC.QUERY_NOT_FOUND, RC.TOPIC_NOT_EXIST))
        if isinstance(replies, int):
            return replies
        found += [rec for r in replies if r.code == RC.SUCCESS for rec in iter_records(r.body, check_crc=False)]
    original, copies = original_and_copies(found, msg_id)
    if original is None:
        return fail(command, not_found_text(msg_id))
    return _print_shown(args, original, copies)


def _print_shown(args, rec, copies: list) -> int:
    view = record_view(rec)
    view["copies"] = [{"topic": shown_topic(c.topic), "offset_msg_id": c.offset_msg_id,
                       "reconsume_times": c.reconsume_times, "store_timestamp": c.store_timestamp} for c in copies]
    if args.json:
        print(json.dumps(view, indent=2))
        return 0
    _print_message(view)
    for c in view["copies"]:
        print(f"{'copy':<16} {c['offset_msg_id']} in {shown(c['topic'])} (reconsume_times {c['reconsume_times']}, "
              f"stored {iso_utc(c['store_timestamp'])})")
    return 0


def _find(args) -> int:
    from rocketmq_emulator.store.records import iter_records

    from .remote import call_server
    from .brokers import broker_addresses
    from .names import resolve_topic
    from ..fronts.remoting.protocol import RemotingCommand, RequestCode as RQ, ResponseCode as RC

    topic = resolve_topic("message find", args.server, args.timeout, args.topic)
    if isinstance(topic, int):
        return topic
    brokers = broker_addresses("message find", args.server, args.timeout)
    if isinstance(brokers, int):
        return brokers
    views = []
    for address in brokers.values():
        req = RemotingCommand.request(RQ.QUERY_MESSAGE, {"topic": topic, "key": args.key, "maxNum": args.max,
                                                         "beginTimestamp": 0, "endTimestamp": 2 ** 62})
        reply = call_server("message find", address, req, args.timeout, refused_exit=2,
                             accept=(RC.QUERY_NOT_FOUND,))
        if isinstance(reply, int):
            return reply
        if reply.code == RC.SUCCESS:
            views += [record_view(r) for r in iter_records(reply.body, check_crc=False)]
    views.sort(key=lambda v: v["store_timestamp"])
    if args.json:
        print(json.dumps(views, indent=2))
        return 0
    if not views:
        print(f"no message of {shown(shown_topic(topic))} has key {shown(args.key)}")
    for v in views:
        print(f"{shown(v['msg_id'])}  offset id {v['offset_msg_id']}  {shown(v['topic'])}/{v['queue_id']}@"
              f"{v['queue_offset']}  tags={shown(v['tags'])}  keys={shown(v['keys'])}  "
              f"reconsume_times={v['reconsume_times']}")
    return 0


def _send(args) -> int:
    import os
    import time

    from rocketmq_emulator.store.records import Prop, properties_to_string

    from .names import known_topics
    from .remote import call_server
    from ..fronts.remoting.protocol import RemotingCommand, RequestCode as RQ, ResponseCode as RC
    from ..pulsar_model.names import named_topic

    known = known_topics("message send", args.server, args.timeout)
    if isinstance(known, int):
        return known
    # a topic no broker has yet is sent to as it is named (the broker makes it, as from a producer)
    topic = named_topic(args.topic, set(known)) or args.topic
    reply = call_server("message send", args.server, RemotingCommand.request(
        RQ.GET_ROUTEINFO_BY_TOPIC, {"topic": topic}), args.timeout, refused_exit=2)
    if isinstance(reply, int):
        return reply
    route = json.loads(reply.body)
    addresses = {b["brokerName"]: b["brokerAddrs"]["0"] for b in route["brokerDatas"]}
    queues = [(q["brokerName"], i) for q in route["queueDatas"] if q["perm"] & 2 for i in range(q["writeQueueNums"])]
    if not queues:
        return fail("message send", f"topic {shown_topic(topic)} has no writable queue (every broker read-only?)")
    broker, qid = queues[(os.getpid() + next(_SEND)) % len(queues)]
    props = {Prop.WAIT: "true", Prop.UNIQ_KEY: f"{os.getpid():08X}{time.time_ns():024X}"[:32]}
    if args.tag:
        props[Prop.TAGS] = args.tag
    if args.key:
        props[Prop.KEYS] = args.key
    if args.delay_level:
        props[Prop.DELAY] = str(args.delay_level)
    req = RemotingCommand.request(RQ.SEND_MESSAGE, {
        "producerGroup": "rocketmq-emulator-cli", "topic": topic, "defaultTopic": "TBW102",
        "defaultTopicQueueNums": 4, "queueId": qid, "sysFlag": 0, "bornTimestamp": int(time.time() * 1000),
        "flag": 0, "properties": properties_to_string(props), "reconsumeTimes": 0}, args.body.encode())
    sent = call_server("message send", addresses[broker], req, args.timeout, refused_exit=2)
    if isinstance(sent, int):
        return sent
    doc = {"msg_id": props[Prop.UNIQ_KEY], "offset_msg_id": sent.header("msgId"), "broker": broker,
           "queue_id": qid, "queue_offset": int(sent.header("queueOffset")), "status": "SEND_OK"
           if sent.code == RC.SUCCESS else sent.code}
    print(json.dumps(doc) if args.json else f"sent {doc['msg_id']} (offset id {doc['offset_msg_id']}) to "
                                            f"{shown(shown_topic(topic))} ({broker} queue {qid} offset {doc['queue_offset']})")
    return 0


def status_main(argv: list[str]) -> int:
    from .common import usage_error
    from .remote import add_server_options, call_server
    from .brokers import broker_addresses
    from ..fronts.remoting.protocol import RemotingCommand, RequestCode as RQ

    p = CommandParser(prog="rocketmq-emulator status", description="Each broker's runtime figures (mqadmin "
                                                                  "brokerStatus): version, clock, topics, messages.")
    p.add_argument("--json", action="store_true", help="one JSON document, numbers and booleans typed")
    add_server_options(p, 10.0)
    try:
        args = p.parse_args(argv)
    except UsageError as exc:
        return usage_error(exc)
    brokers = broker_addresses("status", args.server, args.timeout)
    if isinstance(brokers, int):
        return brokers
    tables = {}
    for name, address in brokers.items():
        reply = call_server("status", address, RemotingCommand.request(RQ.GET_BROKER_RUNTIME_INFO, {}),
                             args.timeout)
        if isinstance(reply, int):
            return reply
        tables[name] = json.loads(reply.body)["table"]
    typed = {name: {k: _typed(v) for k, v in table.items()} for name, table in tables.items()}
    if args.json:
        print(json.dumps(typed, indent=2))
        return 0
    for name, table in typed.items():
        print(f"{name} ({brokers[name]})")
        for k, v in sorted(table.items()):
            if k in _EPOCH_MS_KEYS and isinstance(v, int):
                v = f"{v} ({iso_utc(v)})"
            elif isinstance(v, bool):
                v = str(v).lower()
            print(f"  {shown(k):<28} {shown(str(v))}")
    return 0


# GET_BROKER_RUNTIME_INFO values that are times (epoch ms): readable output adds ISO.
_EPOCH_MS_KEYS = frozenset({"bootTimestamp", "clockNowMillis"})


def _typed(text: str):
    """A KVTable value (always text on the wire) as JSON wants it: a whole number as a
    number, true/false as a boolean, anything else as it is."""
    if text in ("true", "false"):
        return text == "true"
    if text.lstrip("-").isdigit() and len(text) < 20:
        return int(text)
    return text
