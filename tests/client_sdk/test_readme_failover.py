"""The README's failover example, verbatim (README.md), run as a test; the last test
keeps the snippet and this file identical."""

from tests.support.readme import assert_readme_shows

# --- README example: begin ---
import pytest

from rocketmq_emulator.client_sdk import ConsumeConcurrentlyStatus, Message, MessageQueue


@pytest.mark.rocketmq_broker(brokers=2)
def test_a_retry_survives_a_read_only_broker(rocketmq_broker, rocketmq_producer, rocketmq_consumer, time_travel):
    rocketmq_broker.create_topic("Orders", queues=1)             # on broker-a and broker-b
    rocketmq_producer().send(Message("Orders", b"order-1"), MessageQueue("Orders", "broker-a", 0))
    rocketmq_broker.set_writeable(False, broker="broker-a")      # broker-a refuses writes, send-backs too
    deliveries = []

    def on_orders(msgs, context):
        deliveries.append((rocketmq_broker.broker_of(msgs[0]), msgs[0].reconsume_times))
        if len(deliveries) == 1:
            return ConsumeConcurrentlyStatus.RECONSUME_LATER     # the send-back falls back to the other broker
        return ConsumeConcurrentlyStatus.CONSUME_SUCCESS

    consumer = rocketmq_consumer("billing", "Orders", "*", listener=on_orders)
    time_travel("10s")                                           # delay level 3
    assert deliveries == [("broker-a", 0), ("broker-b", 1)]
    assert consumer.stats.fallback_ok == 1
    assert rocketmq_broker.committed_offset("billing", "Orders", 0, broker="broker-a") == 1

    rocketmq_broker.stop_broker("broker-b")                      # out of every route; its clients are cut off
    rocketmq_broker.start_broker("broker-b")
    assert all(b.up for b in rocketmq_broker.brokers())
# --- README example: end ---


def test_the_readme_snippet_is_this_test():
    assert_readme_shows(__file__)
