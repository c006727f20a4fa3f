"""Name-server requests answered by the broker itself (GET_ROUTEINFO_BY_TOPIC 105,
GET_BROKER_CLUSTER_INFO 106): the 4.x JSON of the typed routes of ``core.names`` - the
core alone, or the cluster it belongs to (broker/cluster.py)."""
from __future__ import annotations

import json

from ..protocol import ResponseCode as RC

__all__ = ["get_route_info_by_topic", "get_broker_cluster_info", "topic_route"]


def _broker_data(broker) -> dict:
    return {"cluster": broker.cluster, "brokerName": broker.broker_name, "brokerAddrs": {"0": broker.address}}


def topic_route(core, topic: str) -> dict | None:
    """The core's route of ``topic`` as 4.x's TopicRouteData JSON object (None: unknown)."""
    route = core.names.route(topic)
    if route is None:
        return None
    return {
        "orderTopicConf": None,
        "queueDatas": [{"brokerName": q.broker_name, "readQueueNums": q.read_queue_nums,
                        "writeQueueNums": q.write_queue_nums, "perm": q.perm, "topicSysFlag": q.sys_flag}
                       for q in route.queues],
        "brokerDatas": [_broker_data(b) for b in route.brokers],
        "filterServerTable": {},
    }


def get_route_info_by_topic(front, request, channel):
    core = front.core
    topic = request.header_str("topic")
    route = topic_route(core, topic)
    if route is None:
        return request.response(RC.TOPIC_NOT_EXIST, f"No topic route info in name server for the topic: {topic}")
    return request.response(RC.SUCCESS, body=json.dumps(route).encode())


def get_broker_cluster_info(front, request, channel):
    core = front.core
    brokers = core.names.brokers()
    clusters: dict[str, list[str]] = {}
    for b in brokers:
        clusters.setdefault(b.cluster, []).append(b.broker_name)
    body = {"brokerAddrTable": {b.broker_name: _broker_data(b) for b in brokers}, "clusterAddrTable": clusters}
    return request.response(RC.SUCCESS, body=json.dumps(body).encode())
