"""The README's 5.x transaction example (the pytest-fixture guide), run as this module's
own test and checked to be the README's text verbatim."""
from __future__ import annotations

import pytest

pytest.importorskip("rocketmq.grpc_protocol", reason="needs the grpc extra: ./dev test installs it")

# --- README example: begin ---
from rocketmq import (ClientConfiguration, Credentials, FilterExpression, Message, Producer, SimpleConsumer,
                      TransactionChecker, TransactionResolution)


class CommitOnCheck(TransactionChecker):
    def check(self, message):
        return TransactionResolution.COMMIT        # the local transaction did commit


def test_an_unended_payment_is_committed_at_its_check_back(rocketmq5_endpoint, rocketmq_broker, time_travel):
    rocketmq_broker.create_topic("Payments", message_type="transaction")
    config = ClientConfiguration(rocketmq5_endpoint, Credentials())
    producer = Producer(config, ("Payments",), CommitOnCheck())
    producer.startup()
    consumer = SimpleConsumer(config, "ledger", {"Payments": FilterExpression("*")}, await_duration=1)
    consumer.startup()
    msg = Message()
    msg.topic, msg.body = "Payments", b"pay-1"
    producer.send(msg, producer.begin_transaction())    # a half message, never ended here
    assert consumer.receive(1, 60) == []                # invisible until committed
    time_travel("6s")                                   # transactionTimeOut: the broker asks the checker
    paid = []
    for _ in range(10):                                 # the answer comes back over gRPC: a bounded wait
        paid = consumer.receive(1, 60)
        if paid:
            break
    assert [m.body for m in paid] == [b"pay-1"]
    consumer.ack(paid[0])
    consumer.shutdown(); producer.shutdown()
# --- README example: end ---


def test_the_example_is_the_readmes():
    from tests.support.readme import assert_readme_shows

    assert_readme_shows(__file__)
