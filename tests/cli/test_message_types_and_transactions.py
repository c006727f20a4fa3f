"""Topic message types and transactions from the command line and over the 4.x admin
request, against a running `serve --clock virtual` (issue 42): `topic create
--message-type`, the attribute as mqadmin sends it (UPDATE_AND_CREATE_TOPIC's
``attributes``: ``+message.type=FIFO``), the refusal of a message of another type on the
4.x wire (MESSAGE_ILLEGAL, as the proxy answers a 4.x client), and `topic show` / `group
show` / `clock advance next` with half messages waiting."""
from __future__ import annotations

import json

import pytest

from rocketmq_emulator.broker.cli.main import main
from rocketmq_emulator.broker.fronts.remoting.protocol import RemotingCommand, RequestCode as RQ, ResponseCode as RC
from rocketmq_emulator.client_sdk import (CONSUME_SUCCESS, LocalTransactionState, Message, MQBrokerError, Producer,
                                         PushConsumer, RemoteBroker)
from tests.support.processes import EmulatorProcess
from tests.support.remoting import RawClient


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    proc = EmulatorProcess(tmp_path_factory.mktemp("types") / "store", "--clock", "virtual").start()
    yield proc
    proc.stop()


def cli(server, *argv):
    return main([*argv, "--server", server.address])


def create(server, topic, attributes=None):
    fields = {"topic": topic, "readQueueNums": 1, "writeQueueNums": 1, "perm": 6}
    if attributes is not None:
        fields["attributes"] = attributes
    return RawClient(server.port).call(RemotingCommand.request(RQ.UPDATE_AND_CREATE_TOPIC, fields))


def message_type(server, topic):
    from rocketmq_emulator.broker.fronts.remoting.protocol import EMULATOR_TRANSACTIONS

    reply = RawClient(server.port).call(RemotingCommand.request(EMULATOR_TRANSACTIONS, {"topic": topic}))
    return json.loads(reply.body)["message_type"]


def test_topic_create_takes_a_message_type_and_topic_show_says_it(server, capsys):
    assert cli(server, "topic", "create", "FifoOrders", "--queues", "2", "--message-type", "fifo") == 0
    assert "message type FIFO" in capsys.readouterr().out
    assert message_type(server, "FifoOrders") == "FIFO"
    assert cli(server, "topic", "show", "FifoOrders") == 0
    assert "message type: FIFO" in capsys.readouterr().out
    assert cli(server, "topic", "create", "Odd", "--message-type", "lifo") == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "--message-type" in err and "lifo" in err


def test_the_attribute_as_mqadmin_sends_it_sets_keeps_and_removes_the_type(server):
    assert create(server, "Typed", "+message.type=DELAY").code == RC.SUCCESS
    assert message_type(server, "Typed") == "DELAY"
    assert create(server, "Typed").code == RC.SUCCESS                     # an update without -a keeps it
    assert message_type(server, "Typed") == "DELAY"
    assert create(server, "Typed", "+message.type=TRANSACTION").code == RC.SUCCESS
    assert message_type(server, "Typed") == "TRANSACTION"
    assert create(server, "Typed", "-message.type").code == RC.SUCCESS
    assert message_type(server, "Typed") is None
    for bad, why in (("+message.type=LIFO", "not in set"), ("message.type=FIFO", "format is wrong"),
                     ("+colour=red", "unsupported key")):
        reply = create(server, "Typed", bad)
        assert reply.code == RC.SYSTEM_ERROR and why in reply.remark, (bad, reply.remark)
    reply = create(server, "Fresh", "-message.type")
    assert reply.code == RC.SYSTEM_ERROR and "while creating topic" in reply.remark


def test_a_4x_send_of_another_type_is_refused_with_message_illegal(server):
    assert create(server, "OnlyFifo", "+message.type=FIFO").code == RC.SUCCESS
    remote = RemoteBroker(server.address)
    try:
        producer = Producer("typed-pg", remote).start()
        with pytest.raises(MQBrokerError) as refused:
            producer.send(Message("OnlyFifo", b"no sharding key: a NORMAL message"))
        assert refused.value.code == RC.MESSAGE_ILLEGAL and "expected type is FIFO" in str(refused.value)
        producer.send(Message("OnlyFifo", b"grouped", properties={"__SHARDINGKEY": "g1"}))
        producer.shutdown()
    finally:
        remote.close()


def test_half_messages_waiting_in_topic_show_group_show_and_clock_advance_next(server, capsys):
    remote = RemoteBroker(server.address)
    try:
        got = []
        consumer = PushConsumer("tx-readers", remote, consume_from_where="CONSUME_FROM_FIRST_OFFSET",
                                listener=lambda msgs, ctx: got.extend(msgs) or CONSUME_SUCCESS)
        consumer.subscribe("Payments", "*")
        producer = Producer("tx-app", remote, transaction_checker=lambda m: LocalTransactionState.UNKNOW).start()
        producer.send(Message("Payments", b"plain"))                      # (the topic, through TBW102)
        consumer.start()
        assert remote.run_until(lambda: got, "10s")
        sent = producer.send_message_in_transaction(Message("Payments", b"undecided"),
                                                    lambda m, a: LocalTransactionState.UNKNOW)
        consumer.persist_offsets()
        remote.run_for("300ms")                                            # (oneway: as test_admin_views waits)
        assert cli(server, "topic", "show", "Payments") == 0
        out = capsys.readouterr().out
        assert "half messages waiting for their producer's commit or rollback: 1" in out
        assert sent.transaction_id in out and "tx-app" in out
        assert cli(server, "topic", "show", "Payments", "--json") == 0
        rows = json.loads(capsys.readouterr().out)
        assert sum(r["half_messages"] for r in rows) == 1
        assert cli(server, "group", "show", "tx-readers", "--json") == 0
        assert json.loads(capsys.readouterr().out)["half_messages"] == 1
        assert cli(server, "group", "show", "tx-readers") == 0
        assert "half messages waiting in its topics: 1" in capsys.readouterr().out
        [half] = remote.half_messages("Payments")
        now = json.loads(_clock_now(server, capsys))["now_ms"]
        assert cli(server, "clock", "advance", "next") == 0                # to the first check-back
        capsys.readouterr()
        assert json.loads(_clock_now(server, capsys))["now_ms"] == half["next_check_ms"] > now
        [half] = remote.half_messages("Payments")
        assert half["checks"] == 1
        consumer.shutdown()
        producer.shutdown()
    finally:
        remote.close()


def _clock_now(server, capsys) -> str:
    assert cli(server, "clock", "now", "--json") == 0
    return capsys.readouterr().out
