"""Name-server requests answered by the broker itself: every route points at this
one broker (GET_ROUTEINFO_BY_TOPIC 105, GET_BROKER_CLUSTER_INFO 106)."""
from __future__ import annotations

import json

from ..protocol import ResponseCode as RC

__all__ = ["get_route_info_by_topic", "get_broker_cluster_info", "topic_route"]


def _broker_data(core) -> dict:
    c = core.config
    return {"cluster": c.broker_cluster_name, "brokerName": c.broker_name, "brokerAddrs": {"0": core.addr}}


def topic_route(core, topic: str) -> dict | None:
    tc = core.topics.get(topic)
    if tc is None:
        return None
    return {
        "orderTopicConf": None,
        # A broker registers each topic's perm masked by its own brokerPermission.
        "queueDatas": [{"brokerName": core.config.broker_name, "readQueueNums": tc.read_queue_nums,
                        "writeQueueNums": tc.write_queue_nums, "perm": tc.perm & core.config.broker_permission,
                        "topicSysFlag": tc.topic_sys_flag}],
        "brokerDatas": [_broker_data(core)],
        "filterServerTable": {},
    }


def get_route_info_by_topic(core, request, channel):
    topic = request.header_str("topic")
    route = topic_route(core, topic)
    if route is None:
        return request.response(RC.TOPIC_NOT_EXIST, f"No topic route info in name server for the topic: {topic}")
    return request.response(RC.SUCCESS, body=json.dumps(route).encode())


def get_broker_cluster_info(core, request, channel):
    c = core.config
    body = {"brokerAddrTable": {c.broker_name: _broker_data(core)},
            "clusterAddrTable": {c.broker_cluster_name: [c.broker_name]}}
    return request.response(RC.SUCCESS, body=json.dumps(body).encode())
