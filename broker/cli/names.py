"""A topic or group a command names that no broker has: one line, exit 2, with the
closest name they do have (difflib), instead of an empty answer. Topics come from the
name server's topic list (a Pulsar topic is named, and suggested, by its Pulsar name
too); groups from EMULATOR_GROUPS (every dialect's: configs, offsets, consumers, Pulsar
subscriptions)."""
from __future__ import annotations

import difflib
import json

from .common import fail

__all__ = ["resolve_topic", "known_topics", "check_group", "known_group_rows"]


def known_topics(command: str, server: str, timeout: float) -> list[str] | int:
    """Every topic the name server knows, by the store's names, or the exit code."""
    from .remote import call_server
    from ..fronts.remoting.protocol import RemotingCommand, RequestCode as RQ

    reply = call_server(command, server, RemotingCommand.request(RQ.GET_ALL_TOPIC_LIST_FROM_NAMESERVER, {}),
                         timeout)
    return reply if isinstance(reply, int) else json.loads(reply.body)["topicList"]


def resolve_topic(command: str, server: str, timeout: float, topic: str) -> str | int:
    """The store's name of the topic ``topic`` names on a broker behind ``server`` (a
    Pulsar topic also by its Pulsar name: pulsar_names.named_topic), else the exit code
    after the one line, whose suggestion is a name as `topic list` shows it. A system
    topic (TBW102, SCHEDULE_TOPIC_XXXX ...) is left to the server, which refuses what it
    refuses in its own words."""
    from ..pulsar_model.names import named_topic, shown_topic
    from ..rocketmq_model.topics import is_system_topic

    if is_system_topic(topic):
        return topic
    known = known_topics(command, server, timeout)
    if isinstance(known, int):
        return known
    found = named_topic(topic, set(known))
    return found if found is not None else _missing(command, "topic", topic, [shown_topic(t) for t in known])


def known_group_rows(command: str, server: str, timeout: float) -> list[dict] | int:
    """EMULATOR_GROUPS: every group of the running brokers, or the exit code. A server
    without that request (a real RocketMQ) is asked what mqadmin asks: each broker's
    subscription group configs (dialects unknown)."""
    from .remote import call_server
    from .brokers import broker_addresses
    from ..fronts.remoting.protocol import EMULATOR_GROUPS, RemotingCommand, RequestCode as RQ, ResponseCode as RC

    reply = call_server(command, server, RemotingCommand.request(EMULATOR_GROUPS, {}), timeout,
                         accept=(RC.REQUEST_CODE_NOT_SUPPORTED,))
    if isinstance(reply, int):
        return reply
    if reply.code == RC.SUCCESS:
        return json.loads(reply.body or b"[]")
    brokers = broker_addresses(command, server, timeout)
    if isinstance(brokers, int):
        return brokers
    names = set()
    for address in brokers.values():
        configs = call_server(command, address, RemotingCommand.request(RQ.GET_ALL_SUBSCRIPTIONGROUP_CONFIG, {}),
                               timeout)
        if isinstance(configs, int):
            return configs
        names.update(json.loads(configs.body)["subscriptionGroupTable"])
    return [{"group": g, "dialects": [], "topics": []} for g in sorted(names)]


def check_group(command: str, server: str, timeout: float, group: str) -> int | None:
    """None when a broker behind ``server`` knows ``group``, else the exit code after the
    one line."""
    rows = known_group_rows(command, server, timeout)
    if isinstance(rows, int):
        return rows
    known = [r["group"] for r in rows]
    return None if group in known else _missing(command, "group", group, known)


def _missing(command: str, kind: str, name: str, known: list[str]) -> int:
    close = difflib.get_close_matches(name, known, n=1, cutoff=0.6)
    hint = f"did you mean {close[0]!r}?" if close else f"`rocketmq-emulator {kind} list` lists them"
    return fail(command, f"no {kind} named {name!r} on any broker; {hint}")
