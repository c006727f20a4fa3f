"""``rocketmq-emulator topic ...`` and ``group ...``: create them as mqadmin does, and the
read views (cli/views.py)."""
from __future__ import annotations

import json

from .common import CommandParser, UsageError, fail, int_in_range, shown, usage_error
from .remote import add_server_options, call_server

__all__ = ["topic_main", "group_main"]


def topic_main(argv: list[str]) -> int:
    """``topic create``: UPDATE_AND_CREATE_TOPIC, what ``mqadmin updateTopic`` sends.
    Clients without the Java client's TBW102 fallback (ali-ons) need their topics made
    before they send."""
    from ..pulsar_model.topics import MAX_PARTITIONS
    from ..rocketmq_model.topics import QUEUE_NUMS_MAX

    p = CommandParser(prog="rocketmq-emulator topic", description="Create, list, show or delete topics on a server.")
    sub = p.add_subparsers(dest="action", required=True, metavar="{create,list,show,delete}")
    create = sub.add_parser("create", help="create (or update) TOPIC, as mqadmin updateTopic",
                            description="Create (or update) TOPIC on a server, as mqadmin updateTopic does.")
    create.add_argument("topic", help="the topic's name (with --pulsar: persistent://tenant/ns/name or a short name)")
    create.add_argument("--queues", type=int_in_range(1, QUEUE_NUMS_MAX), default=None,
                        help="read and write queue count (default 8)")
    create.add_argument("--perm", type=int, default=6, choices=(2, 4, 6), help="2 write, 4 read, 6 both")
    create.add_argument("--order", action="store_true", help="an ordered topic")
    create.add_argument("--message-type", type=str.lower, default=None,
                        choices=("normal", "fifo", "delay", "transaction", "lite", "priority"),
                        help="a RocketMQ 5.x topic's message type (mqadmin updateTopic -a +message.type=FIFO): 5.x "
                             "routes accept only it and a message of another type is refused (default: none, "
                             "every type accepted)")
    create.add_argument("--pulsar", action="store_true",
                        help="TOPIC is a Pulsar topic (persistent://tenant/ns/name or a short name): one queue")
    create.add_argument("--partitions", type=int_in_range(1, MAX_PARTITIONS), default=None,
                        help="with --pulsar: a partitioned topic of N partitions (<name>-partition-<i>)")
    create.add_argument("--broker", default=None, metavar="NAME",
                        help="create it on this broker only (default: on every broker that is up)")
    create.add_argument("--json", action="store_true",
                        help="one JSON document: created, updated or unchanged, and each broker's topic before and "
                             "after")
    add_server_options(create, 10.0)
    from .views import add_topic_views, run_view

    add_topic_views(sub, add_server_options)
    try:
        args = p.parse_args(argv)
    except UsageError as exc:
        return usage_error(exc)
    if args.action != "create":
        return run_view("topic", args)
    from ..fronts.remoting.protocol import RemotingCommand, RequestCode

    if args.pulsar and args.message_type:
        return fail("topic create", "--message-type is for RocketMQ topics, not --pulsar ones")
    if args.pulsar:
        names = _pulsar_store_topics(args)
        if isinstance(names, str):
            return fail("topic create", names)
        queues = 1
    elif args.partitions is not None:
        return fail("topic create", "--partitions is for Pulsar topics: give --pulsar too")
    else:
        names, queues = [args.topic], args.queues or 8
    from .brokers import broker_addresses

    brokers = broker_addresses("topic create", args.server, args.timeout, args.broker)
    if isinstance(brokers, int):
        return brokers
    attributes = f"+message.type={args.message_type.upper()}" if args.message_type else None
    changes: dict[str, list] = {}           # broker -> what each of its store topics was and is
    for broker, address in brokers.items():            # as mqadmin updateTopic -c: to every broker
        for name in names:
            req = RemotingCommand.request(RequestCode.UPDATE_AND_CREATE_TOPIC, {
                "topic": name, "readQueueNums": queues, "writeQueueNums": queues,
                "perm": args.perm, "topicFilterType": "SINGLE_TAG", "topicSysFlag": 0, "order": args.order,
                "attributes": attributes})
            reply = call_server("topic create", address, req, args.timeout, refused_exit=2)
            if isinstance(reply, int):
                return reply
            changes.setdefault(broker, []).append(_change(reply.body))
    outcomes = {broker: _outcome(each) for broker, each in changes.items()}
    overall = _outcome(list(outcomes.values()))
    if args.json:
        print(json.dumps({"topic": args.topic, "outcome": overall, "brokers": {
            broker: {"outcome": outcomes[broker], "before": _shown(each[0][0]), "after": _shown(each[0][1])}
            for broker, each in changes.items()}}))
        return 0
    if args.pulsar:
        what = f"{args.partitions} partitions" if args.partitions else "not partitioned"
        print(f"Pulsar topic {shown(args.topic)} {overall}: {what}, stored as {shown(', '.join(names))}")
        return 0
    lines: dict[tuple[str, str], list[str]] = {}        # the same words for several brokers: one line
    for broker, each in changes.items():
        lines.setdefault((outcomes[broker], _change_text(*each[0])), []).append(broker)
    for (outcome, said), on in lines.items():
        where = f" on {', '.join(on)}" if len(brokers) > 1 or args.broker else ""
        print(f"topic {shown(args.topic)} {outcome}{where}: {said}")
    return 0


# -- what `topic create` did: the broker answers the topic's config before and after ------
def _change(body: bytes) -> tuple[dict | None, dict | None]:
    """(before, after) as the broker answered them (TopicConfig JSON; before None: it was
    new); (None, None) from a server that does not say."""
    try:
        doc = json.loads(body) if body else {}
    except ValueError:
        doc = {}
    return doc.get("before"), doc.get("after")


def _outcome(items: list) -> str:
    """created, updated or unchanged: of one (before, after) pair, or of several outcomes
    (the same one everywhere, else updated)."""
    said = {item if isinstance(item, str) else
            ("created or updated" if item[1] is None else "created" if item[0] is None else
             "unchanged" if item[0] == item[1] else "updated") for item in items}
    return said.pop() if len(said) == 1 else "updated"


def _shown(config: dict | None) -> dict | None:
    """A topic's config as `topic create --json` shows it."""
    if config is None:
        return None
    from ..rocketmq_model.topics import TopicConfig

    tc = TopicConfig.from_json(config)
    return {"read_queues": tc.read_queue_nums, "write_queues": tc.write_queue_nums, "perm": tc.perm,
            "order": tc.order, "message_type": tc.message_type}


def _change_text(before: dict | None, after: dict | None) -> str:
    """``4 -> 8 queues, perm 6``: each setting as it is, with what it was when it changed."""
    if after is None:
        return "the server did not say what it was before"
    old, new = _shown(before), _shown(after)

    def queues(c):
        r, w = c["read_queues"], c["write_queues"]
        return f"{r}" if r == w else f"{r} read/{w} write"

    def setting(label, show):
        was, now = (show(old) if old else None), show(new)
        return f"{label}{was} -> {now}" if old is not None and was != now else f"{label}{now}"

    parts = [setting("", queues) + " queues", setting("perm ", lambda c: c["perm"])]
    if new["order"] or (old and old["order"]):
        parts.append(setting("order ", lambda c: str(c["order"]).lower()))
    if new["message_type"] or (old and old["message_type"]):
        parts.append(setting("message type ", lambda c: c["message_type"] or "none"))
    return ", ".join(parts)


def _pulsar_store_topics(args) -> list[str] | str:
    """The store topics a Pulsar topic (or each of its partitions) is kept in, or why not."""
    from ..pulsar_model.names import PulsarNameError, parse_topic, store_topic

    if args.queues is not None:
        return "--queues is not for Pulsar topics: each Pulsar topic (or partition) is one queue"
    try:
        topic = parse_topic(args.topic)
        if args.partitions is None:
            return [store_topic(topic)]
        return [store_topic(f"{topic.full}-partition-{i}") for i in range(args.partitions)]
    except PulsarNameError as exc:
        return str(exc)


def group_main(argv: list[str]) -> int:
    """``group create``: UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, what ``mqadmin updateSubGroup``
    sends: a 5.x FIFO group (--orderly) and its maximum retries."""
    p = CommandParser(prog="rocketmq-emulator group", description="Create, list or show consumer groups on a server.")
    sub = p.add_subparsers(dest="action", required=True, metavar="{create,list,show}")
    create = sub.add_parser("create", help="create (or update) GROUP, as mqadmin updateSubGroup",
                            description="Create (or update) consumer GROUP on a server, as mqadmin updateSubGroup.")
    create.add_argument("group", help="the consumer group's name (^[%|a-zA-Z0-9_-]+$, at most 120 characters)")
    create.add_argument("--retry-max-times", type=int_in_range(0, 10_000), default=16,
                        help="retries before the DLQ (retryMaxTimes; 5.x delivers retryMaxTimes + 1 times)")
    create.add_argument("--orderly", action="store_true",
                        help="a FIFO group for 5.x clients (consumeMessageOrderly): a message group's next "
                             "message waits for the one before")
    add_server_options(create, 10.0)
    from .views import add_group_views, run_view

    add_group_views(sub, add_server_options)
    try:
        args = p.parse_args(argv)
    except UsageError as exc:
        return usage_error(exc)
    if args.action != "create":
        return run_view("group", args)
    from ..fronts.remoting.protocol import RemotingCommand, RequestCode

    body = json.dumps({"groupName": args.group, "retryMaxTimes": args.retry_max_times,
                       "consumeMessageOrderly": args.orderly}).encode()
    from .brokers import broker_addresses

    brokers = broker_addresses("group create", args.server, args.timeout)
    if isinstance(brokers, int):
        return brokers
    for address in brokers.values():            # as mqadmin updateSubGroup -c: on every broker
        req = RemotingCommand.request(RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, None, body)
        reply = call_server("group create", address, req, args.timeout, refused_exit=2)
        if isinstance(reply, int):
            return reply
    print(f"group {shown(args.group)} created: retryMaxTimes {args.retry_max_times}"
          + (", orderly (FIFO)" if args.orderly else ""))
    return 0
