"""HEART_BEAT (34), UNREGISTER_CLIENT (35), GET_CONSUMER_LIST_BY_GROUP (38),
LOCK_BATCH_MQ (41), UNLOCK_BATCH_MQ (42)."""
from __future__ import annotations

import json

from ..config import PERM_READ, PERM_WRITE
from ..groups import SubscriptionData
from ..protocol import ResponseCode as RC
from ..protocol.headers import loads_fastjson
from ..topics import retry_topic

__all__ = ["heart_beat", "unregister_client", "get_consumer_list_by_group", "lock_batch_mq",
           "unlock_batch_mq", "parse_json_body"]


def parse_json_body(body: bytes):
    text = body.decode("utf-8")
    try:
        return json.loads(text)
    except ValueError:
        return loads_fastjson(text)  # fastjson's unquoted numeric keys


def heart_beat(core, request, channel):
    try:
        data = parse_json_body(request.body)
    except (ValueError, UnicodeDecodeError) as exc:
        return request.response(RC.SYSTEM_ERROR, f"bad heartbeat body: {exc}")
    client_id = data.get("clientID") or channel.remote
    channel.client_id = client_id
    for cd in data.get("consumerDataSet") or []:
        group = cd.get("groupName")
        if not group:
            return request.response(RC.SYSTEM_ERROR, "heartbeat consumer data without groupName")
        gc = core.groups.find(group)
        if gc is not None and gc.retry_queue_nums > 0:
            core.topics.create_system(retry_topic(group), gc.retry_queue_nums, PERM_READ | PERM_WRITE)
        subs = [SubscriptionData.from_json(s) for s in cd.get("subscriptionDataSet") or []]
        changed = core.consumers.register(group, channel, client_id, cd.get("consumeType", "CONSUME_PASSIVELY"),
                                          cd.get("messageModel", "CLUSTERING"),
                                          cd.get("consumeFromWhere", "CONSUME_FROM_LAST_OFFSET"), subs)
        if changed:
            core.notify_consumer_ids_changed(group, exclude=channel)
    for pd in data.get("producerDataSet") or []:
        group = pd.get("groupName")
        if group:
            core.producers.setdefault(group, {})[channel] = client_id
    return request.response(RC.SUCCESS)


def unregister_client(core, request, channel):
    request.header_str("clientID")
    pgroup, cgroup = request.header("producerGroup"), request.header("consumerGroup")
    if pgroup:
        core.producers.get(pgroup, {}).pop(channel, None)
    if cgroup and core.consumers.unregister(cgroup, channel):
        core.notify_consumer_ids_changed(cgroup)
    return request.response(RC.SUCCESS)


def get_consumer_list_by_group(core, request, channel):
    group = request.header_str("consumerGroup")
    info = core.consumers.get(group)
    if info is None or not info.channels:
        return request.response(RC.SYSTEM_ERROR, f"no consumer for this group, {group}")
    return request.response(RC.SUCCESS, body=json.dumps({"consumerIdList": info.client_ids()}).encode())


def _mq_set(data) -> list[tuple[str, str, int]]:
    return [(m["topic"], m.get("brokerName", ""), int(m["queueId"])) for m in data.get("mqSet") or []]


def lock_batch_mq(core, request, channel):
    data = parse_json_body(request.body)
    ok = core.locks.try_lock(data["consumerGroup"], _mq_set(data), data["clientId"], core.clock.now_ms())
    body = {"lockOKMQSet": [{"topic": t, "brokerName": b, "queueId": q} for t, b, q in ok]}
    return request.response(RC.SUCCESS, body=json.dumps(body).encode())


def unlock_batch_mq(core, request, channel):
    data = parse_json_body(request.body)
    core.locks.unlock(data["consumerGroup"], _mq_set(data), data["clientId"])
    return request.response(RC.SUCCESS)
