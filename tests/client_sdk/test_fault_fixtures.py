"""Fault rules from pytest (issue 38): the ``rocketmq_fault`` marker installs rules on the
``rocketmq_broker`` fixture's broker before the test, the ``rocketmq_faults`` fixture adds
them during it; both act on the SDK's clients the way the broker's rules act on any."""
from __future__ import annotations

import pytest

from rocketmq_emulator.client_sdk import CONSUME_SUCCESS, RECONSUME_LATER, Message
from rocketmq_emulator.client_sdk.errors import MQBrokerError
from rocketmq_emulator.client_sdk.faults import FaultError


@pytest.mark.rocketmq_fault("send_back", "refuse", group="billing")
def test_a_marker_refuses_every_send_back_so_the_consumer_publishes_the_retry_itself(
        rocketmq_broker, rocketmq_producer, rocketmq_consumer, time_travel, rocketmq_faults):
    rocketmq_broker.create_topic("Orders", queues=1)
    rocketmq_producer().send(Message("Orders", b"poison"))
    attempts = []

    def listener(msgs, ctx):
        attempts.extend(m.reconsume_times for m in msgs)
        return RECONSUME_LATER if len(attempts) == 1 else CONSUME_SUCCESS

    rocketmq_consumer("billing", "Orders", listener=listener)
    time_travel("1m")
    # seed 004's path: the send-back was refused, the client sent the copy to %RETRY% itself
    assert attempts == [0, 1]
    assert [r["hits"] for r in rocketmq_faults.list()] == [1]
    assert len(rocketmq_broker.messages("%RETRY%billing")) == 1


@pytest.mark.rocketmq_fault("send", "refuse", topic="Orders", times=1)
@pytest.mark.rocketmq_fault("send", "refuse", topic="Audit")
def test_several_markers_several_rules(rocketmq_broker, rocketmq_producer, rocketmq_faults):
    rocketmq_broker.create_topic("Orders", queues=1)
    rocketmq_broker.create_topic("Audit", queues=1)
    producer = rocketmq_producer()
    assert producer.send(Message("Orders", b"retried once")).msg_id
    with pytest.raises(MQBrokerError):
        producer.send(Message("Audit", b"never"))
    assert [(r["topic"], r["hits"], r["state"]) for r in rocketmq_faults.list()] == [
        ("Audit", 3, "active"), ("Orders", 1, "spent")]                 # the "times 1" one: listed as spent
    assert len(rocketmq_broker.messages("Orders")) == 1 and rocketmq_broker.messages("Audit") == []


def test_the_fixture_adds_a_rule_for_part_of_a_test(rocketmq_broker, rocketmq_producer, rocketmq_consumer,
                                                    time_travel, rocketmq_faults):
    rocketmq_broker.create_topic("Orders", queues=1)
    got = []
    rocketmq_consumer("cg", "Orders", listener=lambda msgs, ctx: got.extend(msgs) or CONSUME_SUCCESS)
    with rocketmq_faults.add("pull", "hold", group="cg") as hold:
        rocketmq_producer().send(Message("Orders", b"late"))
        time_travel("1m")
        assert got == [] and hold.hits >= 1
    time_travel("1s")
    assert [m.body for m in got] == [b"late"]
    assert rocketmq_faults.list() == []


def test_the_fault_marker_is_registered(pytestconfig):
    assert any(line.startswith("rocketmq_fault(") for line in pytestconfig.getini("markers"))


@pytest.mark.rocketmq_fault("send", "refuse", probability=1.5)
def test_a_bad_marker_rule_names_its_field(request):
    with pytest.raises(FaultError, match="^probability: a number from 0 to 1"):
        request.getfixturevalue("rocketmq_broker")
