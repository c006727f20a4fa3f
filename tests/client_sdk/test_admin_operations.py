"""The CLI's admin operations as methods of EmbeddedBroker (one broker and a cluster, in
process) and RemoteBroker (over TCP): the same requests mqadmin sends, the same answers."""
from __future__ import annotations

import pytest

from rocketmq_emulator.broker.cli.main import main
from rocketmq_emulator.client_sdk import CONSUME_SUCCESS, EmbeddedBroker, Message, RemoteBroker
from rocketmq_emulator.client_sdk.errors import MQBrokerError
from tests.support.processes import EmulatorProcess


def loaded_in_process(brokers: int) -> EmbeddedBroker:
    broker = EmbeddedBroker(brokers=brokers)
    broker.create_topic("Orders", 2)
    producer = broker.producer("pg")
    for i in range(6):
        producer.send(Message("Orders", b"m%d" % i, keys=f"order-{i}"))
    broker.push_consumer("billing", "Orders", listener=lambda msgs, ctx: CONSUME_SUCCESS)
    broker.advance("10s")
    return broker


@pytest.mark.parametrize("brokers", [1, 2])
def test_admin_operations_in_process(brokers):
    broker = loaded_in_process(brokers)
    names = [f"broker-{c}" for c in "ab"[:brokers]]
    assert "Orders" in broker.topics() and "%RETRY%billing" in broker.topics()
    assert broker.groups()["billing"]["retryMaxTimes"] == 16
    stats = broker.topic_stats("Orders")
    assert [s["broker"] for s in stats] == [n for n in names for _ in range(2)]
    assert sum(s["max_offset"] for s in stats) == 6
    progress = [r for r in broker.consume_stats("billing") if r["topic"] == "Orders"]
    assert sum(r["consumer_offset"] for r in progress) == 6 and all(r["lag"] == 0 for r in progress)
    conns = broker.consumer_connections("billing")
    assert conns["message_model"] == "CLUSTERING" and "Orders" in conns["subscriptions"]
    assert len(conns["connections"]) == 1
    [found] = broker.find_messages("Orders", "order-3")
    assert found.body == b"m3"
    assert broker.view_message(found.offset_msg_id).body == b"m3"
    assert broker.view_message(found.msg_id).offset_msg_id == found.offset_msg_id     # the message id too
    with pytest.raises(MQBrokerError, match="no message has id"):
        broker.view_message("7F0000010000" + "0" * 20)
    assert sorted(broker.broker_status()) == names
    moved = broker.reset_offset("billing", "Orders", 0)      # the consumer is online: it is told
    assert [r["offset"] for r in moved] == [0] * (2 * brokers)
    broker.advance("10s")
    assert sum(r["consumer_offset"] for r in broker.consume_stats("billing", "Orders")) == 6   # consumed again
    broker.create_topic("Scratch", 1)
    assert broker.delete_topic("Scratch") == names and "Scratch" not in broker.topics()
    with pytest.raises(MQBrokerError, match="not online"):
        broker.consumer_connections("nobody")
    with pytest.raises(MQBrokerError, match="topic\\[Nope\\] not exist"):
        broker.topic_stats("Nope")
    broker.close()


def test_admin_operations_over_tcp(tmp_path):
    server = EmulatorProcess(tmp_path / "store", "--clock", "virtual", brokers=2).start()
    remote = RemoteBroker(server.address)
    try:
        assert main(["topic", "create", "Orders", "--queues", "1", "--server", server.address]) == 0
        main(["message", "send", "Orders", "hello", "--key", "k-1", "--server", server.address])
        [found] = remote.find_messages("Orders", "k-1")
        assert remote.view_message(found.offset_msg_id).body == b"hello"
        assert remote.view_message(found.msg_id).offset_msg_id == found.offset_msg_id
        assert {s["broker"] for s in remote.topic_stats("Orders")} == {"broker-a", "broker-b"}
        with pytest.raises(MQBrokerError, match="Group billing not exist"):
            remote.reset_offset("billing", "Orders", -1)         # a group the brokers do not know
        assert main(["group", "create", "billing", "--server", server.address]) == 0
        rows = remote.reset_offset("billing", "Orders", -1)      # nobody online: set on the brokers
        assert sum(r["offset"] for r in rows) == 1
        assert sum(r["consumer_offset"] for r in remote.consume_stats("billing", "Orders")) == 1
        assert remote.broker_status()["broker-b"]["brokerName"] == "broker-b"
    finally:
        remote.close()
        server.stop()
