"""HEART_BEAT (34), UNREGISTER_CLIENT (35), GET_CONSUMER_LIST_BY_GROUP (38),
LOCK_BATCH_MQ (41), UNLOCK_BATCH_MQ (42), CHECK_CLIENT_CONFIG (46).

Bodies are read as the Java broker's fastjson reads them (protocol.java_fields: enums by
name or ordinal, numbers as strings, null for Java's default, unknown fields ignored)
and checked whole before anything is applied: a body that is not the JSON document its
code needs, a value fastjson would not take or an illegal group name raises
RequestRefused (an error reply and one WARN line), and nothing of it is registered."""
from __future__ import annotations

import json

from ....rocketmq_model.groups import SubscriptionData, validate_group_name
from ....operations import ConsumerRegistration, Registration
from ..protocol import RequestRefused, ResponseCode as RC
from ..protocol.typed import FILTER_CHECK_CODES
from ..protocol.fastjson import loads_fastjson
from ....java_fields import (CONSUME_FROM_WHERE, CONSUME_TYPES, MESSAGE_MODELS, FieldError, java_enum,
                                    java_int, java_string)

__all__ = ["heart_beat", "unregister_client", "get_consumer_list_by_group", "lock_batch_mq",
           "unlock_batch_mq", "check_client_config", "parse_json_body"]


def parse_json_body(body: bytes):
    """Standard JSON or fastjson's dialect (unquoted numeric keys); ValueError if neither."""
    return loads_fastjson(body)


class _Body:
    """Typed access to one JSON body, field by field as fastjson reads a Java class
    (protocol.java_fields); every complaint names the request and the field."""

    def __init__(self, body: bytes, what: str) -> None:
        self.what = what
        try:
            self.data = parse_json_body(body)
        except ValueError as exc:   # UnicodeDecodeError and JSONDecodeError are ValueErrors
            raise RequestRefused(f"bad {what} body: not a JSON document ({exc})") from None
        self.object(self.data, "the body")

    def object(self, v, name: str) -> dict:
        if not isinstance(v, dict):
            self.refuse(FieldError(name, "a JSON object", v))
        return v

    def objects(self, obj: dict, name: str) -> list[dict]:
        """A Set or List of beans: a JSON array (null: none) of objects."""
        items = obj.get(name)
        if items is None:
            return []
        if not isinstance(items, list):
            self.refuse(FieldError(name, "a JSON array", items))
        return [self.object(item, f"each of <{name}>") for item in items]

    def field(self, convert, obj: dict, name: str, *args, required: bool = False):
        """``convert`` (a java_fields reader) applied to ``obj[name]``; a required field
        that is null after it is refused as missing."""
        try:
            value = convert(obj.get(name), name, *args)
        except FieldError as exc:
            self.refuse(exc)
        if required and value is None:
            raise RequestRefused(f"bad {self.what} body: <{name}> is missing")
        return value

    def string(self, obj: dict, name: str, *, required: bool = False) -> str | None:
        return self.field(java_string, obj, name, required=required)

    def refuse(self, exc: FieldError):
        raise RequestRefused(f"bad {self.what} body: {exc}") from None


def heart_beat(front, request, channel):
    """The heartbeat body (HeartbeatData) as the core's Registration, checked whole first."""
    core = front.core
    body = _Body(request.body, "heartbeat")
    data = body.data
    client_id = body.string(data, "clientID") or channel.remote
    consumers = tuple(_consumer_data(body, cd) for cd in body.objects(data, "consumerDataSet"))
    producers = tuple(validate_group_name(body.string(pd, "groupName", required=True))
                      for pd in body.objects(data, "producerDataSet"))
    core.register(Registration(client_id, consumers, producers), channel)
    channel.language, channel.version = request.language or "JAVA", request.version or 0
    return request.response(RC.SUCCESS)


def _consumer_data(body: _Body, cd: dict) -> ConsumerRegistration:
    """ConsumerData: its enums by name or ordinal (a null or unknown name: the default)."""
    group = validate_group_name(body.string(cd, "groupName", required=True))
    subs = []
    for s in body.objects(cd, "subscriptionDataSet"):
        topic = body.string(s, "topic", required=True)
        try:
            subs.append(SubscriptionData.from_json(s))
        except ValueError as exc:
            raise RequestRefused(f"bad heartbeat body: subscription of {topic:.130}: {exc}") from None
    return ConsumerRegistration(
        group, body.field(java_enum, cd, "consumeType", CONSUME_TYPES, "CONSUME_PASSIVELY"),
        body.field(java_enum, cd, "messageModel", MESSAGE_MODELS, "CLUSTERING"),
        body.field(java_enum, cd, "consumeFromWhere", CONSUME_FROM_WHERE, "CONSUME_FROM_LAST_OFFSET"), tuple(subs))


def unregister_client(front, request, channel):
    core = front.core
    request.header_str("clientID")
    # both groups are nullable; an empty one means "none", as before
    pgroup, cgroup = request.header("producerGroup"), request.header("consumerGroup")
    core.unregister(channel, producer_group=validate_group_name(pgroup) if pgroup else None,
                    consumer_group=validate_group_name(cgroup) if cgroup else None)
    return request.response(RC.SUCCESS)


def get_consumer_list_by_group(front, request, channel):
    core = front.core
    group = validate_group_name(request.header_str("consumerGroup"))
    ids = core.consumer_ids(group)
    if ids is None:
        return request.response(RC.SYSTEM_ERROR, f"no consumer for this group, {group}")
    return request.response(RC.SUCCESS, body=json.dumps({"consumerIdList": ids}).encode())


def _lock_request(request, what: str) -> tuple[str, str, list[tuple[str, str, int]]]:
    """LockBatchRequestBody / UnlockBatchRequestBody: (group, clientId, queues)."""
    body = _Body(request.body, what)
    data = body.data
    group = validate_group_name(body.string(data, "consumerGroup", required=True))
    client_id = body.string(data, "clientId", required=True)
    # MessageQueue.queueId is a primitive int: absent or null, it is 0 (as in Java)
    mqs = [(body.string(m, "topic", required=True), body.string(m, "brokerName") or "",
            body.field(java_int, m, "queueId")) for m in body.objects(data, "mqSet")]
    return group, client_id, mqs


def lock_batch_mq(front, request, channel):
    core = front.core
    group, client_id, mqs = _lock_request(request, "LOCK_BATCH_MQ")
    ok = core.lock_queues(group, client_id, mqs)
    body = {"lockOKMQSet": [{"topic": t, "brokerName": b, "queueId": q} for t, b, q in ok]}
    return request.response(RC.SUCCESS, body=json.dumps(body).encode())


def unlock_batch_mq(front, request, channel):
    core = front.core
    group, client_id, mqs = _lock_request(request, "UNLOCK_BATCH_MQ")
    core.unlock_queues(group, client_id, mqs)
    return request.response(RC.SUCCESS)


def check_client_config(front, request, channel):
    """CheckClientRequestBody {clientId, group, subscriptionData}: a 4.x consumer that
    subscribes by SQL92 asks at its start whether the broker takes the subscription
    (SYSTEM_ERROR while enablePropertyFilter is off, SUBSCRIPTION_PARSE_FAILED with the
    parser's complaint); no body, or no subscription in it, is SUCCESS as upstream."""
    if not request.body:
        return request.response(RC.SUCCESS)
    body = _Body(request.body, "CHECK_CLIENT_CONFIG")
    sub = body.data.get("subscriptionData")
    if sub is None:
        return request.response(RC.SUCCESS)
    sub = body.object(sub, "subscriptionData")
    outcome, remark = front.core.check_filter(body.string(sub, "expressionType"), body.string(sub, "subString"))
    return request.response(FILTER_CHECK_CODES[outcome], remark)
