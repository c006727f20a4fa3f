"""Name-server requests answered by the broker itself (GET_ROUTEINFO_BY_TOPIC 105,
GET_BROKER_CLUSTER_INFO 106): the 4.x JSON of the typed routes of ``core.names`` - the
core alone, or the cluster it belongs to (broker/cluster.py)."""
from __future__ import annotations

import json

from ..protocol import ResponseCode as RC
from ..protocol.typed import broker_data, route_data

__all__ = ["get_route_info_by_topic", "get_broker_cluster_info"]


def get_route_info_by_topic(front, request, channel):
    core = front.core
    topic = request.header_str("topic")
    route = core.name_route(topic)
    if route is None:
        return request.response(RC.TOPIC_NOT_EXIST, f"No topic route info in name server for the topic: {topic}")
    return request.response(RC.SUCCESS, body=json.dumps(route_data(route)).encode())


def get_broker_cluster_info(front, request, channel):
    core = front.core
    brokers = core.name_brokers()
    clusters: dict[str, list[str]] = {}
    for b in brokers:
        clusters.setdefault(b.cluster, []).append(b.broker_name)
    body = {"brokerAddrTable": {b.broker_name: broker_data(b) for b in brokers}, "clusterAddrTable": clusters}
    return request.response(RC.SUCCESS, body=json.dumps(body).encode())
