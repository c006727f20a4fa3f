"""EMULATOR_LITE: lite topics (RIP-83) over the wire, for `topic show` and `group show`.
Header ``topic``: that LITE topic's lite topics ({"lite_topics": [{"lite_topic",
"broker", "last_write_ms"}]}); header ``consumerGroup``: that group's lite consumers and
what each subscribed to ({"lite_subscriptions": [{"client_id", "broker", "topic",
"lite_topics"}]}). Every broker that is up is asked."""
from __future__ import annotations

import json

from ....cluster import live_members
from ..protocol import ResponseCode as RC

__all__ = ["lite_request"]


def lite_request(front, request, channel):
    topic, group = request.header("topic"), request.header("consumerGroup")
    doc: dict[str, list] = {}
    cores = live_members(front.core)
    if topic:
        doc["lite_topics"] = [{"lite_topic": name, "broker": c.config.broker_name, "last_write_ms": ms}
                              for c in cores for name, ms in c.lite_topics_of(topic)]
    if group:
        doc["lite_subscriptions"] = [{"client_id": client, "broker": c.config.broker_name, "topic": parent,
                                      "lite_topics": lites}
                                     for c in cores for client, (parent, lites) in c.lite_subscriptions_of(group).items()]
    return request.response(RC.SUCCESS, body=json.dumps(doc).encode())
