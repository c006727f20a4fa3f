"""The SDK's transactional producer over TCP against `rocketmq-emulator serve --clock
virtual`: END_TRANSACTION on the wire, and the broker's CHECK_TRANSACTION_STATE (a
broker→client oneway request) answered by the producer's checker when the server's
clock reaches the check; the topic is made through TBW102 by the half message's send, as
a 4.x broker with autoCreateTopicEnable makes it (issue 42)."""
from __future__ import annotations

from rocketmq_emulator.broker.fronts.remoting.protocol import RequestCode
from rocketmq_emulator.client_sdk import CONSUME_SUCCESS, LocalTransactionState, Message, Producer, PushConsumer


def test_commit_rollback_and_a_check_back_over_tcp(remote, unique):
    topic, group = unique("TxTcp"), unique("tx-tcp")
    r = remote()
    checks = []
    producer = Producer(unique("tx-pg"), r, transaction_checker=lambda msg: (
        checks.append(msg.body), LocalTransactionState.COMMIT_MESSAGE)[1]).start()
    seen = []
    transport = producer._instance.transport
    handler = transport._handler
    transport.on_request(lambda cmd: (seen.append(cmd), handler(cmd))[1])
    got = []
    consumer = PushConsumer(group, r, consume_from_where="CONSUME_FROM_FIRST_OFFSET",
                            listener=lambda msgs, ctx: got.extend(msgs) or CONSUME_SUCCESS)
    consumer.subscribe(topic, "*").start()
    try:
        producer.send_message_in_transaction(Message(topic, b"committed"),
                                             lambda m, a: LocalTransactionState.COMMIT_MESSAGE)
        producer.send_message_in_transaction(Message(topic, b"rolled back"),
                                             lambda m, a: LocalTransactionState.ROLLBACK_MESSAGE)
        unknown = producer.send_message_in_transaction(Message(topic, b"asked"), lambda m, a: LocalTransactionState.UNKNOW)
        assert r.run_until(lambda: [m.body for m in got] == [b"committed"], "10s")
        r.advance_server_clock("6s")                  # transactionTimeOut: the broker asks
        assert r.run_until(lambda: [m.body for m in got] == [b"committed", b"asked"], "10s"), [m.body for m in got]
        assert checks == [b"asked"]
        [check] = [cmd for cmd in seen if cmd.code == RequestCode.CHECK_TRANSACTION_STATE]
        assert check.is_oneway and check.header("transactionId") == unknown.msg_id
        assert r.half_messages(topic) == []           # every one ended: nothing left to check
        r.advance_server_clock("20m")
        assert [m.body for m in got] == [b"committed", b"asked"] and checks == [b"asked"]
    finally:
        consumer.shutdown()
        producer.shutdown()
