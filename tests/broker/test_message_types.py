"""Topic message types (broker/rocketmq_model/message_types.py, issue 42): the message.type attribute as
upstream's AttributeParser / AttributeUtil take it, a message's type from its properties
(TopicMessageType.parseFromMessageProperty), the core's refusal of another type on a typed
topic, and the attribute kept in topics.json across a restart."""
from __future__ import annotations

import pytest

from rocketmq_emulator.broker.core import BrokerCore
from rocketmq_emulator.broker.fronts.remoting.protocol import ResponseCode as RC
from rocketmq_emulator.broker.rocketmq_model.message_types import (
    TopicAttributeError,
    accepted_types,
    apply_attribute_changes,
    message_type_of,
    mismatch,
)
from rocketmq_emulator.delay_scheduler import VirtualClock

from .wire import WireClient


@pytest.mark.parametrize("props, deliver_at, kind", [
    ({}, None, "NORMAL"),
    ({"TAGS": "a"}, None, "NORMAL"),
    ({"__SHARDINGKEY": "g"}, None, "FIFO"),
    ({"DELAY": "3"}, None, "DELAY"),
    ({"TIMER_DELIVER_MS": "1"}, None, "DELAY"),
    ({}, 123, "DELAY"),
    ({"TRAN_MSG": "true", "__SHARDINGKEY": "g"}, None, "TRANSACTION"),
    ({"TRAN_MSG": "TRUE"}, None, "TRANSACTION"),
    ({"TRAN_MSG": "false"}, None, "NORMAL"),
])
def test_a_messages_type_comes_from_its_properties_as_upstream_reads_them(props, deliver_at, kind):
    assert message_type_of(props, deliver_at) == kind


def test_accepted_types_and_mismatches():
    assert accepted_types(None) == ("NORMAL", "FIFO", "DELAY")            # untyped: as before types existed
    assert accepted_types("FIFO") == ("FIFO",)
    assert accepted_types("MIXED") == ("NORMAL", "FIFO", "DELAY", "TRANSACTION")
    assert mismatch(None, {"TRAN_MSG": "true"}) is None
    assert mismatch("MIXED", {"DELAY": "1"}) is None
    assert mismatch("FIFO", {}) == "TopicMessageType validate failed, the expected type is FIFO, but actual type " \
                                   "is NORMAL"


@pytest.mark.parametrize("current, change, create, after", [
    ({}, None, True, {}),
    ({}, "+message.type=FIFO", True, {"message.type": "FIFO"}),
    ({}, "+message.type=fifo", True, {"message.type": "FIFO"}),
    ({"message.type": "FIFO"}, None, False, {"message.type": "FIFO"}),
    ({"message.type": "FIFO"}, "", False, {"message.type": "FIFO"}),
    ({"message.type": "FIFO"}, "+message.type=DELAY", False, {"message.type": "DELAY"}),
    ({"message.type": "FIFO"}, "-message.type", False, {}),
    ({}, "+message.type=NORMAL,+queue.type=SimpleCQ", True, {"message.type": "NORMAL", "queue.type": "SimpleCQ"}),
    ({}, "+reserve.time=3600", True, {"reserve.time": "3600"}),
])
def test_attribute_changes_as_mqadmin_sends_them(current, change, create, after):
    assert apply_attribute_changes(current, change, create=create) == after


@pytest.mark.parametrize("current, change, create, why", [
    ({}, "+message.type=LIFO", True, "not in set"),
    ({}, "message.type=FIFO", True, "format is wrong"),
    ({}, "-message.type", True, "while creating topic"),
    ({}, "-message.type", False, "nonexistent key"),
    ({}, "+colour=red", True, "unsupported key"),
    ({}, "+message.type=FIFO,+message.type=DELAY", True, "duplication"),
    ({"queue.type": "SimpleCQ"}, "+queue.type=BatchCQ", False, "unchangeable"),
    ({}, "+reserve.time=soon", True, "integer"),
])
def test_bad_attribute_changes_are_refused_with_upstreams_reason(current, change, create, why):
    with pytest.raises(TopicAttributeError, match=why):
        apply_attribute_changes(current, change, create=create)


def test_a_typed_topic_refuses_another_type_on_the_4x_wire_and_an_untyped_one_takes_all(core, client):
    core.create_topic("OnlyDelay", 1, message_type="delay")
    core.create_topic("Anything", 1)
    refused = client.send("OnlyDelay", b"now")
    assert refused.code == RC.MESSAGE_ILLEGAL and "expected type is DELAY" in refused.remark
    assert client.send("OnlyDelay", b"later", delay=2).code == RC.SUCCESS
    for props in ({}, {"__SHARDINGKEY": "g"}, {"DELAY": "1"}, {"TRAN_MSG": "true", "PGROUP": "PG"}):
        assert client.send("Anything", b"x", props=props).code == RC.SUCCESS
    assert core.queue_bounds("OnlyDelay", 0) == (0, 0)
    with pytest.raises(ValueError, match="message type"):
        core.create_topic("Bad", 1, message_type="lifo")


def test_the_type_is_kept_in_topics_json_across_a_restart(tmp_path):
    clock = VirtualClock()
    core = BrokerCore.open(tmp_path, clock)
    core.create_topic("Payments", 2, message_type="transaction")
    core.close()
    core = BrokerCore.open(tmp_path, clock)
    tc = core.topics.get("Payments")
    assert tc.message_type == "TRANSACTION" and tc.to_json()["attributes"] == {"message.type": "TRANSACTION"}
    assert WireClient(core).send("Payments", b"plain").code == RC.MESSAGE_ILLEGAL
    core.close()
