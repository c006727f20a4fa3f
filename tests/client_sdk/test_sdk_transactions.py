"""The SDK's transactional sends (Producer.send_message_in_transaction with a local
transaction and a transaction_checker) on the in-process broker and its virtual clock:
the 4.x path end to end — a half message in RMQ_SYS_TRANS_HALF_TOPIC, END_TRANSACTION,
CHECK_TRANSACTION_STATE after transactionTimeOut (6 s) then every transactionCheckInterval
(60 s), up to transactionCheckMax (15) checks, then TRANS_CHECK_MAX_TIME_TOPIC (issue 42).
Over TCP against `serve`: tests/client_sdk/tcp/test_tcp_transactions.py."""
from __future__ import annotations

import pytest

from rocketmq_emulator.client_sdk import CONSUME_SUCCESS, LocalTransactionState, Message, MQClientError
from rocketmq_emulator.client_sdk.transaction import TransactionSendResult
from rocketmq_emulator.store.records import TRANS_CHECK_MAX_TIME_TOPIC, TRANS_HALF_TOPIC

COMMIT, ROLLBACK, UNKNOW = (LocalTransactionState.COMMIT_MESSAGE, LocalTransactionState.ROLLBACK_MESSAGE,
                            LocalTransactionState.UNKNOW)


@pytest.fixture
def delivered(rocketmq_broker):
    rocketmq_broker.create_topic("TxOrders", 2)
    got = []
    rocketmq_broker.push_consumer("tx-billing", "TxOrders", listener=lambda msgs, ctx: got.extend(msgs)
                                  or CONSUME_SUCCESS, consume_from_where="CONSUME_FROM_FIRST_OFFSET")
    return got


def test_a_commit_is_delivered_once_and_a_rollback_never(rocketmq_broker, delivered, time_travel):
    p = rocketmq_broker.producer("tx-app", transaction_checker=lambda msg: UNKNOW)
    seen = []
    result = p.send_message_in_transaction(Message("TxOrders", b"kept", tags="A"),
                                           lambda msg, arg: (seen.append((msg.body, arg)), COMMIT)[1], arg=42)
    assert isinstance(result, TransactionSendResult) and result.local_transaction_state is COMMIT
    assert seen == [(b"kept", 42)] and result.transaction_id == result.msg_id
    dropped = p.send_message_in_transaction(Message("TxOrders", b"dropped"), lambda msg, arg: ROLLBACK)
    assert dropped.local_transaction_state is ROLLBACK
    time_travel("20m")                                   # long past every check: nothing is left waiting
    assert [m.body for m in delivered] == [b"kept"]
    [m] = delivered
    assert m.msg_id == result.msg_id and m.tags == "A" and m.get_property("TRAN_MSG") is None
    assert rocketmq_broker.messages(TRANS_CHECK_MAX_TIME_TOPIC) == []
    assert [h.body for h in rocketmq_broker.messages(TRANS_HALF_TOPIC)] == [b"kept", b"dropped"]
    assert rocketmq_broker.core.transactions.waiting() == []


def test_an_unknown_one_is_checked_back_at_6s_then_every_minute_and_committed_at_a_check(rocketmq_broker, delivered,
                                                                                        time_travel):
    checks = []

    def checker(msg):
        checks.append((msg.topic, msg.body, rocketmq_broker.now_ms))
        return COMMIT if len(checks) == 3 else UNKNOW

    p = rocketmq_broker.producer("tx-app", transaction_checker=checker)
    start = rocketmq_broker.now_ms
    result = p.send_message_in_transaction(Message("TxOrders", b"later"), lambda msg, arg: UNKNOW)
    assert result.local_transaction_state is UNKNOW
    time_travel("5s")
    assert checks == [] and delivered == []
    time_travel("1s")
    assert [c[:2] for c in checks] == [("TxOrders", b"later")]
    time_travel("2m")
    assert [t - start for _, _, t in checks] == [6_000, 66_000, 126_000]
    assert [m.body for m in delivered] == [b"later"] and delivered[0].msg_id == result.msg_id
    time_travel("10m")
    assert len(checks) == 3 and len(delivered) == 1      # committed once, asked no more


def test_one_never_answered_is_checked_15_times_then_discarded(rocketmq_broker, delivered, time_travel):
    checks = []
    p = rocketmq_broker.producer("tx-app", transaction_checker=lambda msg: checks.append(msg.msg_id))  # None: UNKNOW
    result = p.send_message_in_transaction(Message("TxOrders", b"orphan"), lambda msg, arg: UNKNOW)
    time_travel("6s")
    time_travel("14m")
    assert len(checks) == 15 and set(checks) == {result.msg_id}
    [waiting] = rocketmq_broker.core.transactions.waiting()
    assert waiting.checks == 15 and waiting.next_check_ms == rocketmq_broker.now_ms + 60_000
    time_travel("1m")
    assert rocketmq_broker.core.transactions.waiting() == []
    [dead] = rocketmq_broker.messages(TRANS_CHECK_MAX_TIME_TOPIC)
    assert dead.body == b"orphan" and dead.get_property("TRANSACTION_CHECK_TIMES") == "15"
    time_travel("1h")
    assert delivered == [] and len(checks) == 15


def test_a_local_transaction_that_raises_is_unknown_and_a_checker_decides(rocketmq_broker, delivered, time_travel):
    p = rocketmq_broker.producer("tx-app", transaction_checker=lambda msg: ROLLBACK)

    def fails(msg, arg):
        raise RuntimeError("database down")

    result = p.send_message_in_transaction(Message("TxOrders", b"unsure"), fails)
    assert result.local_transaction_state is UNKNOW
    time_travel("6s")
    assert rocketmq_broker.core.transactions.waiting() == [] and delivered == []


def test_bad_input_is_refused_before_anything_is_sent(rocketmq_broker):
    p = rocketmq_broker.producer("tx-app")
    with pytest.raises(MQClientError, match="local transaction"):
        p.send_message_in_transaction(Message("TxOrders", b"x"), None)
    with pytest.raises(MQClientError):
        p.send_message_in_transaction(Message("bad topic!", b"x"), lambda m, a: COMMIT)
    assert rocketmq_broker.core.transactions.waiting() == []
