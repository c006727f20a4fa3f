"""The README's pytest example, verbatim (README.md), run as a test; the
last test keeps the snippet and this file identical."""

from tests.support.readme import assert_readme_shows

# --- README example: begin ---
from rocketmq_emulator.client_sdk import ConsumeConcurrentlyStatus, Message


def test_a_poison_message_ends_in_the_dlq(rocketmq_broker, rocketmq_producer, rocketmq_consumer, time_travel):
    rocketmq_broker.create_topic("Orders", queues=2)
    deliveries = []

    def on_orders(msgs, context):
        deliveries.extend(msgs)
        if msgs[0].body == b"poison":
            return ConsumeConcurrentlyStatus.RECONSUME_LATER   # retried after 10s, 30s, 1m, ... 2h
        return ConsumeConcurrentlyStatus.CONSUME_SUCCESS

    rocketmq_consumer("billing", "Orders", "*", listener=on_orders)
    producer = rocketmq_producer()
    producer.send(Message("Orders", b"poison", tags="TagA"))
    producer.send(Message("Orders", b"fine", tags="TagA"))

    time_travel("5h")                                           # the whole 16-retry ladder, in milliseconds

    assert sum(m.body == b"poison" for m in deliveries) == 17   # 1 delivery + 16 retries
    assert [m.body for m in rocketmq_broker.dlq_messages("billing")] == [b"poison"]
    assert rocketmq_broker.committed_offsets("billing", "Orders") == {0: 1, 1: 1}
# --- README example: end ---


def test_the_readme_snippet_is_this_test():
    assert_readme_shows(__file__)
