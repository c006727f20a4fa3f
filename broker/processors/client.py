"""HEART_BEAT (34), UNREGISTER_CLIENT (35), GET_CONSUMER_LIST_BY_GROUP (38),
LOCK_BATCH_MQ (41), UNLOCK_BATCH_MQ (42).

Bodies are checked whole before anything is applied: a body that is not the JSON
document its code needs, a field of the wrong type or an illegal group name raises
RequestRefused (an error reply and one WARN line), and nothing of it is registered."""
from __future__ import annotations

import json

from ..groups import SubscriptionData, validate_group_name
from ..operations import ConsumerRegistration, Registration
from ..protocol import RequestRefused, ResponseCode as RC
from ..protocol.fastjson import loads_fastjson

__all__ = ["heart_beat", "unregister_client", "get_consumer_list_by_group", "lock_batch_mq",
           "unlock_batch_mq", "parse_json_body"]


def parse_json_body(body: bytes):
    """Standard JSON or fastjson's dialect (unquoted numeric keys); ValueError if neither."""
    return loads_fastjson(body)


class _Body:
    """Typed access to one JSON body; every complaint names the request and the field."""

    def __init__(self, body: bytes, what: str) -> None:
        self.what = what
        try:
            self.data = parse_json_body(body)
        except ValueError as exc:   # UnicodeDecodeError and JSONDecodeError are ValueErrors
            raise RequestRefused(f"bad {what} body: not a JSON document ({exc})") from None
        self.object(self.data, "the body")

    def object(self, v, name: str) -> dict:
        if not isinstance(v, dict):
            self.refuse(name, "a JSON object", v)
        return v

    def get(self, obj: dict, name: str, kind: type, *, required: bool = False):
        v = obj.get(name)
        if v is None:
            if required:
                raise RequestRefused(f"bad {self.what} body: <{name}> is missing")
            return None
        if not isinstance(v, kind) or (kind is int and isinstance(v, bool)):
            self.refuse(f"<{name}>", _KIND_NAMES[kind], v)
        return v

    def objects(self, obj: dict, name: str) -> list[dict]:
        return [self.object(item, f"each of <{name}>") for item in self.get(obj, name, list) or []]

    def integer(self, obj: dict, name: str) -> int:
        """A Java int or long field: a JSON number, or digits in a string."""
        v = obj.get(name)
        if isinstance(v, int) and not isinstance(v, bool):
            return v
        if isinstance(v, str) and v.strip().lstrip("-").isdigit() and len(v) < 24:
            return int(v)
        if v is None:
            raise RequestRefused(f"bad {self.what} body: <{name}> is missing")
        self.refuse(f"<{name}>", "an integer", v)

    def refuse(self, name: str, expected: str, got) -> None:
        shown = json.dumps(got, default=str)
        shown = shown if len(shown) <= 60 else shown[:60] + "..."
        raise RequestRefused(f"bad {self.what} body: {name} must be {expected}, got {shown}")


_KIND_NAMES = {str: "a string", int: "an integer", list: "a JSON array", dict: "a JSON object"}


def heart_beat(front, request, channel):
    """The heartbeat body as the core's Registration (checked whole first)."""
    core = front.core
    body = _Body(request.body, "heartbeat")
    data = body.data
    client_id = body.get(data, "clientID", str) or channel.remote
    consumers = tuple(_consumer_data(body, cd) for cd in body.objects(data, "consumerDataSet"))
    producers = tuple(validate_group_name(body.get(pd, "groupName", str, required=True))
                      for pd in body.objects(data, "producerDataSet"))
    core.register(Registration(client_id, consumers, producers), channel)
    channel.language, channel.version = request.language or "JAVA", request.version or 0
    return request.response(RC.SUCCESS)


def _consumer_data(body: _Body, cd: dict) -> ConsumerRegistration:
    group = validate_group_name(body.get(cd, "groupName", str, required=True))
    subs = []
    for s in body.objects(cd, "subscriptionDataSet"):
        body.get(s, "topic", str, required=True)
        try:
            subs.append(SubscriptionData.from_json(s))
        except ValueError as exc:
            raise RequestRefused(f"bad heartbeat body: subscription of {s['topic']:.130}: {exc}") from None
    return ConsumerRegistration(group, body.get(cd, "consumeType", str) or "CONSUME_PASSIVELY",
                                body.get(cd, "messageModel", str) or "CLUSTERING",
                                body.get(cd, "consumeFromWhere", str) or "CONSUME_FROM_LAST_OFFSET", tuple(subs))


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
    group = validate_group_name(body.get(data, "consumerGroup", str, required=True))
    client_id = body.get(data, "clientId", str, required=True)
    mqs = [(body.get(m, "topic", str, required=True), body.get(m, "brokerName", str) or "",
            body.integer(m, "queueId")) for m in body.objects(data, "mqSet")]
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
