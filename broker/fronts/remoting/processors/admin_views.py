"""What mqadmin's everyday reads and rocketmq-dashboard ask a 4.x name server and broker
(4.9.8's AdminBrokerProcessor / DefaultRequestProcessor), answered with the same bodies:

  GET_ALL_TOPIC_LIST_FROM_NAMESERVER (206)  TopicList {"topicList": [...]}: every topic of
                                            every broker up (the name server's view)
  GET_TOPIC_STATS_INFO (202)                TopicStatsTable {"offsetTable": {MessageQueue:
                                            {minOffset, maxOffset, lastUpdateTimestamp}}}
  GET_CONSUME_STATS (208)                   ConsumeStats {"offsetTable": {MessageQueue:
                                            {brokerOffset, consumerOffset, lastTimestamp}},
                                            "consumeTps": 0.0}; without a topic, every topic
                                            the group has offsets for
  GET_ALL_SUBSCRIPTIONGROUP_CONFIG (201)    SubscriptionGroupWrapper {"subscriptionGroupTable":
                                            {group: config}, "dataVersion": {...}}
  GET_BROKER_RUNTIME_INFO (28)              KVTable {"table": {name: text}}: brokerVersionDesc,
                                            commitLogMin/MaxOffset, bootTimestamp, and the
                                            emulator's clock, topics and groups
  INVOKE_BROKER_TO_RESET_OFFSET (222)       header topic, group, timestamp (-1: the end),
                                            isForce: each queue's offset at that time (or the
                                            committed one when it is lower and not forced)
                                            sent to every online consumer of the group as
                                            RESET_CONSUMER_CLIENT_OFFSET (220, oneway; they
                                            move there and commit it); none online:
                                            CONSUMER_NOT_ONLINE, as 4.9.8 (mqadmin then sets
                                            the offsets itself with UPDATE_CONSUMER_OFFSET)
  GET_CONSUMER_CONNECTION_LIST (203)        ConsumerConnection: the group's connections
                                            (clientId, clientAddr, language, version), its
                                            subscriptions, consume type, model, from where;
                                            none online: CONSUMER_NOT_ONLINE
  GET_PRODUCER_CONNECTION_LIST (204)        ProducerConnection: the group's connections;
                                            none: PRODUCER_NOT_ONLINE
  DELETE_SUBSCRIPTIONGROUP (207)            the group's config (and, with cleanOffset, its
                                            committed offsets)
  DELETE_TOPIC_IN_BROKER (215)              the topic's config and the groups' offsets of it
                                            go; its records stay in the append-only log
  DELETE_TOPIC_IN_NAMESRV (216)             routes are the brokers' topic configs: nothing
                                            more to delete
  EMULATOR_GROUPS (the emulator's)          every group of every running broker with the
                                            client dialects using it (group_views), JSON

A map keyed by MessageQueue is written as fastjson writes it (the key an object), which
the Java clients' fastjson reads; ``fastjson.loads_fastjson`` reads it here.
"""
from __future__ import annotations

import json

from ..protocol import RequestRefused, ResponseCode as RC
from ..protocol.fastjson import dumps_queue_map
from ....rocketmq_model.topics import RETRY_PREFIX

__all__ = ["known_groups_request", "consumer_connections", "producer_connections", "delete_subscription_group", "reset_offset", "get_broker_runtime_info", "get_all_subscription_group_config", "get_all_topic_list", "get_topic_stats_info", "get_consume_stats", "delete_topic_in_broker",
           "delete_topic_in_namesrv"]


def _last_store_time(core, topic: str, qid: int, offset: int) -> int:
    """Store time of the message at ``offset`` of a queue (0 when there is none)."""
    if offset < 0:
        return 0
    entry = core.queue_entry(topic, qid, offset)
    raw = core.message_at(entry[0]) if entry else None
    if raw is None:
        return 0
    from rocketmq_emulator.store.records import decode_record
    return decode_record(raw, check_crc=False).store_timestamp


def get_all_topic_list(front, request, channel):
    core = front.core
    from ....cluster import live_members

    # (a lite topic's own queue is not listed: upstream's LMQ topics have no topic config,
    # so the name server never lists them; `topic show PARENT` shows its lite topics)
    topics = sorted({t for member in live_members(core) for t in member.topic_names()
                     if not member.is_lite_store_topic(t)})
    return request.response(RC.SUCCESS, body=json.dumps({"topicList": topics}).encode())


def get_broker_runtime_info(front, request, channel):
    core = front.core
    from importlib.metadata import PackageNotFoundError, version

    try:
        ours = version("rocketmq-emulator")
    except PackageNotFoundError:
        ours = "unknown"
    clock = core.clock
    log_min, log_max = core.commit_log_bounds()
    table = {"brokerVersionDesc": f"rocketmq-emulator {ours} (RocketMQ 4.9.8 remoting)",
             "brokerName": core.config.broker_name, "brokerPermission": core.config.broker_permission,
             "commitLogMinOffset": log_min, "commitLogMaxOffset": log_max,
             "bootTimestamp": core.boot_ms, "clock": "virtual" if getattr(clock, "is_virtual", False) else "real",
             "clockNowMillis": clock.now_ms(), "topics": len(core.topic_names()), "groups": core.group_count(),
             "stopped": core.stopped}
    body = json.dumps({"table": {k: str(v).lower() if isinstance(v, bool) else str(v) for k, v in table.items()}})
    return request.response(RC.SUCCESS, body=body.encode())


def get_all_subscription_group_config(front, request, channel):
    core = front.core
    return request.response(RC.SUCCESS, body=json.dumps(core.groups_json()).encode())


def get_topic_stats_info(front, request, channel):
    core = front.core
    topic = request.header_str("topic")
    tc = core.topic_config(topic)
    if tc is None:
        return request.response(RC.TOPIC_NOT_EXIST, f"topic[{topic}] not exist")
    name = core.config.broker_name
    entries = []
    for qid in range(tc.write_queue_nums):
        lo, hi = core.queue_bounds(topic, qid)
        entries.append(((topic, name, qid), {"minOffset": max(lo, 0), "maxOffset": max(hi, 0),
                                             "lastUpdateTimestamp": _last_store_time(core, topic, qid, hi - 1)}))
    return request.response(RC.SUCCESS, body=('{"offsetTable":' + dumps_queue_map(entries) + "}").encode())


def get_consume_stats(front, request, channel):
    core = front.core
    group = request.header_str("consumerGroup")
    topic = request.header("topic")
    name = core.config.broker_name
    if topic:
        if core.topic_config(topic) is None:
            return request.response(RC.TOPIC_NOT_EXIST, f"topic[{topic}] not exist")
        topics = [topic]
    else:       # every topic the group has offsets for (ConsumerOffsetManager.whichTopicByConsumer)
        topics = sorted({key.rpartition("@")[0] for key in core.committed_offsets() if key.rpartition("@")[2] == group})
    entries = []
    for t in topics:
        tc = core.topic_config(t)
        if tc is None:
            continue
        for qid in range(tc.write_queue_nums):
            broker_offset = max(core.queue_bounds(t, qid)[1], 0)
            consumer_offset = max(core.stored_offset(group, t, qid), 0)
            entries.append(((t, name, qid), {"brokerOffset": broker_offset, "consumerOffset": consumer_offset,
                                             "lastTimestamp": _last_store_time(core, t, qid, consumer_offset - 1)}))
    body = '{"consumeTps":0.0,"offsetTable":' + dumps_queue_map(entries) + "}"
    return request.response(RC.SUCCESS, body=body.encode())


def delete_topic_in_broker(front, request, channel):
    core = front.core
    topic = request.header_str("topic")
    if core.is_system_topic(topic) and not topic.startswith(RETRY_PREFIX):
        raise RequestRefused(f"the topic[{topic}] is a system topic and cannot be deleted")
    if not core.delete_topic(topic):
        return request.response(RC.TOPIC_NOT_EXIST, f"topic[{topic}] not exist")
    for key in core.committed_offsets():
        t, _, group = key.rpartition("@")
        if t == topic:
            core.record_offsets_deleted(group, topic)
    return request.response(RC.SUCCESS)


def delete_topic_in_namesrv(front, request, channel):
    return request.response(RC.SUCCESS)


def reset_offset(front, request, channel):
    core = front.core
    from ..protocol import RemotingCommand, RequestCode as RQ

    topic, group = request.header_str("topic"), request.header_str("group")
    timestamp = request.header_int("timestamp")
    force = request.header_bool("isForce", True)
    tc = core.topic_config(topic)
    if tc is None:
        return request.response(RC.SYSTEM_ERROR, f"[reset-offset] reset offset failed, no topic in this broker. "
                                                 f"topic={topic}")
    name = core.config.broker_name
    entries = []
    for qid in range(tc.write_queue_nums):
        at = core.queue_bounds(topic, qid)[1] if timestamp == -1 else core.offset_at_time(topic, qid, timestamp)
        at = max(at, 0)
        committed = core.stored_offset(group, topic, qid)
        entries.append(((topic, name, qid), at if force or committed < 0 or at < committed else committed))
    table = '{"offsetTable":' + dumps_queue_map(entries) + "}"
    info = core.consumer_group(group)
    if info is None or not info.channels:
        return request.response(RC.CONSUMER_NOT_ONLINE, f"Consumer not online, so can not reset offset, Group: "
                                                         f"{group} Topic: {topic} Timestamp: {timestamp}")
    for target in list(info.channels):
        front.push(target, RemotingCommand.request(RQ.RESET_CONSUMER_CLIENT_OFFSET,
                                                  {"topic": topic, "group": group, "timestamp": timestamp,
                                                   "isForce": force}, table.encode(), oneway=True))
    return request.response(RC.SUCCESS, body=table.encode())


def _connection(channel, client_id: str) -> dict:
    return {"clientId": client_id, "clientAddr": channel.remote, "language": channel.language,
            "version": channel.version}


def consumer_connections(front, request, channel):
    core = front.core
    group = request.header_str("consumerGroup")
    info = core.consumer_group(group)
    if info is None or not info.channels:
        return request.response(RC.CONSUMER_NOT_ONLINE, f"the consumer group[{group}] not online")
    subs = {t: {"topic": d.topic, "subString": d.sub_string, "tagsSet": sorted(d.tags_set),
                "codeSet": sorted(d.code_set or ()), "subVersion": d.sub_version, "expressionType": d.expression_type}
            for t, d in sorted(info.subscriptions.items())}
    body = {"connectionSet": [_connection(ch, cid) for ch, cid in info.channels.items()],
            "subscriptionTable": subs, "consumeType": info.consume_type, "messageModel": info.message_model,
            "consumeFromWhere": info.consume_from_where}
    return request.response(RC.SUCCESS, body=json.dumps(body).encode())


def producer_connections(front, request, channel):
    core = front.core
    group = request.header_str("producerGroup")
    chans = core.producer_channels(group)
    if not chans:
        return request.response(RC.SYSTEM_ERROR, f"the producer group[{group}] not exist")
    body = {"connectionSet": [_connection(ch, cid) for ch, cid in chans.items()]}
    return request.response(RC.SUCCESS, body=json.dumps(body).encode())


def delete_subscription_group(front, request, channel):
    core = front.core
    group = request.header_str("groupName")
    if not core.delete_group(group):
        return request.response(RC.SUBSCRIPTION_GROUP_NOT_EXIST, f"the subscription group[{group}] not exist")
    if request.header_bool("cleanOffset"):
        for key in core.committed_offsets():
            topic, _, owner = key.rpartition("@")
            if owner == group:
                core.record_offsets_deleted(group, topic)
    return request.response(RC.SUCCESS)


def known_groups_request(front, request, channel):
    core = front.core
    from ....cluster import live_members
    from ....facade.across import known_groups

    return request.response(RC.SUCCESS, body=json.dumps(known_groups(live_members(core))).encode())
