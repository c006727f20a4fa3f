"""HEART_BEAT, consumer lists, notifications and queue locks (checklist 37–40)."""
import json

import pytest

from rocketmq_emulator.broker.core import BrokerCore
from rocketmq_emulator.broker.fronts.remoting.protocol import RequestCode as RQ, ResponseCode as RC
from rocketmq_emulator.delay_scheduler import VirtualClock
from rocketmq_emulator.store.records import tags_code

from .wire import WireClient
from tests.support.remoting import front_of


def test_37_heartbeat_creates_the_retry_topic_and_replies_success(core):
    c = WireClient(core)
    assert c.heartbeat("G", ["T"]).code == RC.SUCCESS
    tc = core.topics.get("%RETRY%G")
    assert (tc.read_queue_nums, tc.write_queue_nums, tc.perm) == (1, 1, 6)


def test_38_heartbeat_registers_subscriptions(core):
    c = WireClient(core)
    c.heartbeat("G", ["T"], sub="TagA || TagB", sub_version=42)
    sub = core.consumers.get("G").subscriptions["T"]
    assert sub.sub_string == "TagA || TagB" and sub.tags_set == {"TagA", "TagB"}
    assert sub.code_set == {tags_code("TagA"), tags_code("TagB")} and sub.sub_version == 42


def test_39_consumer_list(core):
    a, b = WireClient(core, "127.0.0.1:1", "ip@a"), WireClient(core, "127.0.0.1:2", "ip@b")
    assert a.call(RQ.GET_CONSUMER_LIST_BY_GROUP, {"consumerGroup": "G"}).code == RC.SYSTEM_ERROR
    a.heartbeat("G")
    b.heartbeat("G")
    resp = a.call(RQ.GET_CONSUMER_LIST_BY_GROUP, {"consumerGroup": "G"})
    assert json.loads(resp.body) == {"consumerIdList": ["ip@a", "ip@b"]}


def test_new_consumer_notifies_the_groups_other_consumers(core):
    a, b = WireClient(core, "127.0.0.1:1", "ip@a"), WireClient(core, "127.0.0.1:2", "ip@b")
    a.heartbeat("G")
    assert front_of(core).take_outgoing() == []
    b.heartbeat("G")
    out = front_of(core).take_outgoing()
    assert [(ch, cmd.code, cmd.is_oneway, cmd.ext_fields) for ch, cmd in out] == [
        (a.channel, RQ.NOTIFY_CONSUMER_IDS_CHANGED, True, {"consumerGroup": "G"})]
    b.heartbeat("G")            # same membership: no notification
    assert front_of(core).take_outgoing() == []
    core.disconnect(b.channel)  # leaving is a change too
    assert [ch for ch, _ in front_of(core).take_outgoing()] == [a.channel]


def _lock(client, queues, code=RQ.LOCK_BATCH_MQ):
    body = {"consumerGroup": "G", "clientId": client.client_id,
            "mqSet": [{"topic": "T", "brokerName": "broker-a", "queueId": q} for q in queues]}
    resp = client.call(code, None, json.dumps(body).encode())
    assert resp.code == RC.SUCCESS
    return sorted(m["queueId"] for m in json.loads(resp.body)["lockOKMQSet"]) if resp.body else None


def test_40_locks_are_exclusive_and_expire_after_60s(core):
    a, b = WireClient(core, "127.0.0.1:1", "ip@a"), WireClient(core, "127.0.0.1:2", "ip@b")
    assert _lock(a, [0, 1]) == [0, 1]
    assert _lock(b, [1, 2]) == [2]
    core.clock.advance(60_001)
    assert _lock(b, [1]) == [1]
    _lock(b, [1, 2], RQ.UNLOCK_BATCH_MQ)
    assert _lock(a, [1, 2]) == [1, 2]
