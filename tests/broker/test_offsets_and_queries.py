"""Offsets and look-ups: checklist 34–36, 82; search by timestamp; query by key."""
import json

import pytest

from rocketmq_emulator.broker.core import BrokerCore
from rocketmq_emulator.broker.fronts.remoting.protocol import RequestCode as RQ, ResponseCode as RC
from rocketmq_emulator.delay_scheduler import VirtualClock
from rocketmq_emulator.store.records import decode_record, iter_records

from .wire import WireClient


def test_34_query_offset_with_nothing_stored_is_0_when_offset_0_is_resident(core, client):
    client.send("T")
    resp = client.call(RQ.QUERY_CONSUMER_OFFSET, {"consumerGroup": "G", "topic": "T", "queueId": 0})
    assert resp.code == RC.SUCCESS and resp.ext_fields["offset"] == "0"


def test_35_update_offset_oneway_is_stored_without_a_reply(core, client):
    client.send("T")
    client.heartbeat("G", ["T"])
    reply = client.call(RQ.UPDATE_CONSUMER_OFFSET, {"consumerGroup": "G", "topic": "T", "queueId": 0,
                                                    "commitOffset": 1}, oneway=True)
    assert reply is None
    resp = client.call(RQ.QUERY_CONSUMER_OFFSET, {"consumerGroup": "G", "topic": "T", "queueId": 0})
    assert resp.ext_fields["offset"] == "1"


def test_update_offset_for_unknown_topic_or_group(core, client):
    client.send("T")
    client.heartbeat("G", ["T"])
    ext = {"consumerGroup": "G", "topic": "Nope", "queueId": 0, "commitOffset": 1}
    assert client.call(RQ.UPDATE_CONSUMER_OFFSET, ext).code == RC.TOPIC_NOT_EXIST
    ext.update(topic="T", consumerGroup="Ghost")
    assert client.call(RQ.UPDATE_CONSUMER_OFFSET, ext).code == RC.SUBSCRIPTION_GROUP_NOT_EXIST


def test_36_max_and_min_offset(core, client):
    for _ in range(3):
        client.send("T")
    ext = {"topic": "T", "queueId": 0}
    assert client.call(RQ.GET_MAX_OFFSET, ext).ext_fields["offset"] == "3"
    assert client.call(RQ.GET_MIN_OFFSET, ext).ext_fields["offset"] == "0"
    assert client.call(RQ.GET_MAX_OFFSET, {"topic": "Unknown", "queueId": 0}).ext_fields["offset"] == "0"


def test_search_offset_by_timestamp_picks_the_closer_neighbour(core, client):
    for step in (0, 1000, 1000):        # store times t0, t0+1000, t0+2000
        core.clock.advance(step)
        client.send("T")
    t0 = core.clock.now_ms() - 2000

    def search(ts):
        return int(client.call(RQ.SEARCH_OFFSET_BY_TIMESTAMP, {"topic": "T", "queueId": 0,
                                                               "timestamp": ts}).ext_fields["offset"])
    assert search(t0 + 1000) == 1       # exact
    assert search(t0 + 400) == 0        # closer to the left
    assert search(t0 + 600) == 1        # closer to the right
    assert search(t0 + 500) == 0        # tie: the left one


def test_82_view_message_by_commit_log_offset(core, client):
    resp = client.send("T", b"find me")
    phys = core.store.queue_entry("T", 0, 0)[0]
    view = client.call(RQ.VIEW_MESSAGE_BY_ID, {"offset": phys})
    assert view.code == RC.SUCCESS and decode_record(view.body).body == b"find me"
    bad = client.call(RQ.VIEW_MESSAGE_BY_ID, {"offset": phys + 1})
    assert bad.code == RC.SYSTEM_ERROR and "can not find message by the offset" in bad.remark


def test_query_message_by_key(core, client):
    client.send("T", b"one", keys="order-1 customer-9")
    client.send("T", b"two", keys="order-2")
    now = core.clock.now_ms()
    resp = client.call(RQ.QUERY_MESSAGE, {"topic": "T", "key": "customer-9", "maxNum": 32,
                                          "beginTimestamp": 0, "endTimestamp": now + 1})
    assert resp.code == RC.SUCCESS and [r.body for r in iter_records(resp.body)] == [b"one"]
    miss = client.call(RQ.QUERY_MESSAGE, {"topic": "T", "key": "nope", "maxNum": 32,
                                          "beginTimestamp": 0, "endTimestamp": now + 1})
    assert miss.code == RC.QUERY_NOT_FOUND


def test_route_and_cluster_info_point_at_this_broker(core, client):
    client.send("T")
    route = client.call(RQ.GET_ROUTEINFO_BY_TOPIC, {"topic": "T"})
    data = json.loads(route.body)
    assert data["brokerDatas"][0]["brokerAddrs"] == {"0": core.addr}
    assert data["queueDatas"][0]["perm"] == 6 and data["queueDatas"][0]["writeQueueNums"] == 4
    missing = client.call(RQ.GET_ROUTEINFO_BY_TOPIC, {"topic": "Nope"})
    assert missing.code == RC.TOPIC_NOT_EXIST                 # checklist 41
    info = json.loads(client.call(RQ.GET_BROKER_CLUSTER_INFO).body)
    assert info["clusterAddrTable"] == {"DefaultCluster": ["broker-a"]}


def test_route_perm_reflects_broker_permission(core, client):
    client.send("T")
    core.set_broker_permission(4)
    data = json.loads(client.call(RQ.GET_ROUTEINFO_BY_TOPIC, {"topic": "T"}).body)
    assert data["queueDatas"][0]["perm"] == 4
