"""Transactional messages on the core and the 4.x wire (broker/rocketmq_model/transactions.py, issue 42):
a half message waits in RMQ_SYS_TRANS_HALF_TOPIC, END_TRANSACTION commits or rolls it
back, and one left unresolved is checked back with its producer (CHECK_TRANSACTION_STATE)
transactionTimeOut after it was stored, then every transactionCheckInterval, up to
transactionCheckMax checks, after which it is discarded into TRANS_CHECK_MAX_TIME_TOPIC
— on the broker's clock, and from the commit log after a restart."""
from __future__ import annotations

import json

import pytest

from rocketmq_emulator.broker.config import BrokerConfig
from rocketmq_emulator.broker.core import BrokerCore
from rocketmq_emulator.broker.fronts.remoting.protocol import RequestCode as RQ, ResponseCode as RC
from rocketmq_emulator.broker.notifications import TransactionCheck
from rocketmq_emulator.broker.operations import EndOutcome, EndTransaction, Registration, Resolution
from rocketmq_emulator.delay_scheduler import VirtualClock
from rocketmq_emulator.store.records import (TRANS_CHECK_MAX_TIME_TOPIC, TRANS_HALF_TOPIC, TRANS_OP_HALF_TOPIC,
                                             SysFlag, decode_offset_msg_id, decode_record)

from .wire import WireClient

COMMIT, ROLLBACK, NOT_TYPE = SysFlag.TRANSACTION_COMMIT, SysFlag.TRANSACTION_ROLLBACK, 0


def half(client, body=b"x", topic="Orders", group="tx-pg", **props):
    reply = client.send(topic, body, group=group, props={"TRAN_MSG": "true", "PGROUP": group, **props})
    assert reply.code == RC.SUCCESS, reply
    assert reply.header("transactionId") and reply.header("transactionId") == client_uniq(client)
    return reply


def client_uniq(client):
    return f"7F00000100002A9F00000000{client.uniq:08X}"


def end(client, reply, flag, *, group="tx-pg", from_check=False, oneway=True, tid=None):
    _, offset = decode_offset_msg_id(reply.header("msgId"))
    return client.call(RQ.END_TRANSACTION, {
        "producerGroup": group, "tranStateTableOffset": reply.header("queueOffset"), "commitLogOffset": offset,
        "commitOrRollback": flag, "fromTransactionCheck": from_check, "msgId": tid or reply.header("transactionId"),
        "transactionId": tid or reply.header("transactionId")}, oneway=oneway)


def stored(core, topic, qid=0):
    return [core.store.look_message_by_offset(core.store.queue_entry(topic, qid, o)[0])
            for o in range(core.queue_bounds(topic, qid)[0], core.queue_bounds(topic, qid)[1])]


@pytest.fixture
def orders(core, client):
    core.create_topic("Orders", 1)
    return client


def test_a_half_message_waits_aside_and_a_commit_stores_it_in_its_topic(core, orders):
    reply = half(orders, b"order-1", TAGS="A")
    assert stored(core, "Orders") == []                                      # no consumer sees it
    [h] = stored(core, TRANS_HALF_TOPIC)
    assert (h.properties["REAL_TOPIC"], h.properties["REAL_QID"], h.properties["TRAN_MSG"]) == ("Orders", "0", "true")
    assert h.sys_flag & SysFlag.TRANSACTION_MASK == 0
    assert end(orders, reply, COMMIT) is None                                 # oneway: no answer
    [m] = stored(core, "Orders")
    assert m.body == b"order-1" and m.properties["TAGS"] == "A" and m.sys_flag & SysFlag.TRANSACTION_MASK == COMMIT
    assert not {"REAL_TOPIC", "REAL_QID", "TRAN_MSG"} & set(m.properties)
    assert m.properties["UNIQ_KEY"] == m.properties["__transactionId__"] == reply.header("transactionId")
    assert core.transactions.waiting() == []
    [op] = stored(core, TRANS_OP_HALF_TOPIC)
    assert op.body == b"0" and op.properties["TAGS"] == "d"
    core._check()


def test_a_rollback_drops_it_an_unknown_leaves_it_and_a_second_end_is_refused(core, orders):
    reply = half(orders)
    assert end(orders, reply, NOT_TYPE, oneway=False) is None                 # UNKNOW: nothing to answer
    assert len(core.transactions.waiting()) == 1
    assert end(orders, reply, ROLLBACK, oneway=False).code == RC.SUCCESS
    assert stored(core, "Orders") == [] and core.transactions.waiting() == []
    again = end(orders, reply, COMMIT, oneway=False)
    assert again.code == RC.SYSTEM_ERROR and "no half message waits" in again.remark
    core.advance_clock(3_600_000)
    assert stored(core, "Orders") == [] and stored(core, TRANS_CHECK_MAX_TIME_TOPIC) == []


def test_an_end_names_its_producer_group_and_may_name_the_half_by_offset(core, orders):
    reply = half(orders)
    wrong = end(orders, reply, COMMIT, group="someone-else", oneway=False)
    assert wrong.code == RC.SYSTEM_ERROR and "producer group wrong" in wrong.remark
    assert end(orders, reply, COMMIT, tid="not-its-id", oneway=False).code == RC.SUCCESS   # by its offset
    assert len(stored(core, "Orders")) == 1


def test_the_check_back_ladder_asks_the_producer_then_discards(core, orders):
    checks: list[TransactionCheck] = []
    core.subscribe(checks.append, (TransactionCheck,))
    producer = core.connect("127.0.0.1:50002")
    core.register(Registration("producer-1", producers=("tx-pg",)), producer)
    reply = half(orders, b"undecided")
    start = core.clock.now_ms()
    times = []
    core.subscribe(lambda c: times.append(core.clock.now_ms() - start), (TransactionCheck,))
    core.advance_clock(6_000 + 14 * 60_000)
    assert times == [6_000 + n * 60_000 for n in range(15)]
    assert {c.channel for c in checks} == {producer} and {c.transaction_id for c in checks} == \
        {reply.header("transactionId")}
    first = checks[0]
    assert (first.record.topic, first.record.queue_id, first.record.body) == ("Orders", 0, b"undecided")
    copies = stored(core, TRANS_HALF_TOPIC)
    assert [c.properties.get("TRANSACTION_CHECK_TIMES") for c in copies] == [None] + [str(n) for n in range(1, 16)]
    assert {c.properties.get("TRAN_PREPARED_QUEUE_OFFSET") for c in copies[1:]} == {"0"}
    assert (checks[-1].queue_offset, checks[-1].commit_log_offset) == (15, copies[-1].commit_log_offset)
    [waiting] = core.transactions.waiting()
    assert waiting.checks == 15 and waiting.next_check_ms == start + 6_000 + 15 * 60_000
    core.advance_clock(59_999)
    assert stored(core, TRANS_CHECK_MAX_TIME_TOPIC) == []
    core.advance_clock(1)
    [dead] = stored(core, TRANS_CHECK_MAX_TIME_TOPIC)
    assert dead.body == b"undecided" and dead.properties["REAL_TOPIC"] == "Orders"
    assert core.transactions.waiting() == [] and len(checks) == 15 and stored(core, "Orders") == []
    core._check()


def test_an_answer_to_a_check_commits_and_no_producer_online_still_counts_the_check(core, orders):
    checks = []
    core.subscribe(checks.append, (TransactionCheck,))
    reply = half(orders)
    core.advance_clock(6_000)                                # nobody to ask: the check counts all the same
    assert checks == [] and core.transactions.waiting()[0].checks == 1
    producer = core.connect("127.0.0.1:50002")
    core.register(Registration("producer-1", producers=("tx-pg",)), producer)
    core.advance_clock(60_000)
    [check] = checks
    result = core.end_transaction(EndTransaction("tx-pg", check.transaction_id, Resolution.COMMIT, from_check=True,
                                                 commit_log_offset=check.commit_log_offset,
                                                 queue_offset=check.queue_offset))
    assert result.outcome is EndOutcome.COMMITTED and result.msg_id
    [m] = stored(core, "Orders")
    assert m.properties["TRANSACTION_CHECK_TIMES"] == "2" and m.properties["UNIQ_KEY"] == reply.header("transactionId")


def test_the_4x_front_asks_with_check_transaction_state_carrying_the_message(core, orders):
    from tests.support.remoting import front_of

    front = front_of(core)
    half(orders, b"asked")
    heartbeat = {"clientID": "c1", "producerDataSet": [{"groupName": "tx-pg"}], "consumerDataSet": []}
    assert orders.call(RQ.HEART_BEAT, None, json.dumps(heartbeat).encode()).code == RC.SUCCESS
    front.take_outgoing()
    core.advance_clock(6_000)
    [(channel, cmd)] = front.take_outgoing()
    assert channel is orders.channel and cmd.code == RQ.CHECK_TRANSACTION_STATE and cmd.is_oneway
    msg = decode_record(cmd.body)
    assert (msg.topic, msg.body, msg.properties["PGROUP"]) == ("Orders", b"asked", "tx-pg")
    assert cmd.header("transactionId") == msg.properties["UNIQ_KEY"] and cmd.header("offsetMsgId")
    assert int(cmd.header("tranStateTableOffset")) == 1                        # the check's own copy


def test_a_first_check_time_of_the_producers_own(core, orders):
    half(orders, CHECK_IMMUNITY_TIME_IN_SECONDS="30")
    [w] = core.transactions.waiting()
    assert w.next_check_ms == core.clock.now_ms() + 30_000


def test_the_ladder_follows_the_brokers_config():
    conf = BrokerConfig.from_properties({"transactionTimeOut": "1000", "transactionCheckInterval": "5000",
                                         "transactionCheckMax": "2"})
    core = BrokerCore.in_memory(VirtualClock(), conf)
    core.create_topic("Orders", 1)
    half(WireClient(core))
    core.advance_clock(1_000 + 5_000)
    assert core.transactions.waiting()[0].checks == 2
    core.advance_clock(5_000)
    assert core.transactions.waiting() == [] and len(stored(core, TRANS_CHECK_MAX_TIME_TOPIC)) == 1


def test_waiting_half_messages_and_their_ladder_survive_a_restart(tmp_path):
    clock = VirtualClock()
    core = BrokerCore.open(tmp_path, clock)
    core.create_topic("Orders", 1)
    c = WireClient(core)
    committed = half(c, b"committed")
    half(c, b"waits")
    end(c, committed, COMMIT)
    core.advance_clock(6_000)                                 # one check of the one waiting
    core.close()
    core = BrokerCore.open(tmp_path, clock)
    [w] = core.transactions.waiting()
    assert w.checks == 1 and w.next_check_ms == clock.now_ms() + 60_000 and w.topic == "Orders"
    core.advance_clock(14 * 60_000)
    assert core.transactions.waiting()[0].checks == 15
    core.close()
    core = BrokerCore.open(tmp_path, clock)
    core.advance_clock(60_000)
    assert core.transactions.waiting() == []
    assert [m.body for m in stored(core, "Orders")] == [b"committed"]
    assert [m.body for m in stored(core, TRANS_CHECK_MAX_TIME_TOPIC)] == [b"waits"]
    core.close()
    core = BrokerCore.open(tmp_path, clock)
    assert core.transactions.waiting() == []
    core.close()


def test_the_op_record_carries_the_address_the_broker_learnt_after_its_start(core, orders):
    # serve sets the address once its port is bound; an op record written after that
    # carries it, as every other record does
    core.store_host = ("10.0.0.7", 40123)
    end(orders, half(orders), COMMIT)
    [op] = stored(core, TRANS_OP_HALF_TOPIC)
    assert op.store_host == op.born_host == ("10.0.0.7", 40123)
