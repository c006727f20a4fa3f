"""The README's fixture note on a consumer that subscribes before its topic exists
(RocketMQ's behaviour: it gets the topic's queues at the next rebalance, 20 s later),
verbatim, run as a test; the last test keeps the snippet and this file identical."""

from tests.support.readme import assert_readme_shows

# --- README example: begin ---
from rocketmq_emulator.client_sdk import ConsumeConcurrentlyStatus, Message


def test_a_consumer_that_subscribed_before_its_topic_existed(rocketmq_broker, rocketmq_producer, rocketmq_consumer,
                                                              time_travel):
    got = []
    rocketmq_consumer("billing", "Invoices",
                      listener=lambda msgs, ctx: got.extend(msgs) or ConsumeConcurrentlyStatus.CONSUME_SUCCESS)
    rocketmq_producer().send(Message("Invoices", b"first"))     # the send creates the topic
    time_travel("19s")
    assert got == []                                            # no queue of it is the consumer's yet
    time_travel("1s")                                           # the next rebalance, 20 s after the first
    assert [m.body for m in got] == [b"first"]


def test_a_topic_created_first_is_consumed_at_once(rocketmq_broker, rocketmq_producer, rocketmq_consumer,
                                                   time_travel):
    rocketmq_broker.create_topic("Invoices", queues=2)           # the remedy: the topic before the consumer
    got = []
    rocketmq_consumer("billing", "Invoices",
                      listener=lambda msgs, ctx: got.extend(msgs) or ConsumeConcurrentlyStatus.CONSUME_SUCCESS)
    rocketmq_producer().send(Message("Invoices", b"first"))
    time_travel("1s")
    assert [m.body for m in got] == [b"first"]
# --- README example: end ---


def test_the_readme_snippet_is_this_test():
    assert_readme_shows(__file__)
