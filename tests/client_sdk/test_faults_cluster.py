"""EmbeddedBroker(brokers=2).faults: a rule goes to both brokers as one (the door's
across.place_fault_rule): its handle counts the cluster's hits and removes it from both,
and clear() counts each rule once, as a `serve` cluster's EMULATOR_FAULTS clear does."""
from __future__ import annotations

from rocketmq_emulator.client_sdk import Message
from tests.client_sdk.test_cluster_in_process import cluster  # noqa: F401 (the fixture: two brokers, Orders)


def test_a_rule_is_one_rule_on_both_brokers_and_its_handle_removes_it_from_both(cluster):
    with cluster.faults.add("send", "refuse", topic="Orders", times=2) as rule:
        [listed] = cluster.faults.list()
        assert listed["id"] == rule.id and listed["brokers"] == ["broker-a", "broker-b"]
        producer = cluster.producer("pg")
        result = producer.send(Message("Orders", b"through"))        # refused twice, then stored
        assert rule.hits == 2 and cluster.faults.list()[0]["state"] == "spent"
        assert [m.body for m in cluster.messages("Orders", broker=result.message_queue.broker_name)] == [b"through"]
    assert cluster.faults.list() == []


def test_clear_counts_a_rule_on_both_brokers_once(cluster):
    cluster.faults.add("send", "refuse", topic="Orders")
    cluster.faults.add("pull", "delay", delay="5s", broker="broker-b")
    assert cluster.faults.clear() == 2
    assert cluster.faults.list() == [] and cluster.faults.clear() == 0
