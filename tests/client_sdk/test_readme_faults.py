"""The README's fault example for 4.x clients (guide "Testing your failure handling"),
verbatim, run as a test; the last test keeps the snippet and this file identical."""

from tests.support.readme import assert_readme_shows

# --- README example: begin ---
import pytest

from rocketmq_emulator.client_sdk import ConsumeConcurrentlyStatus, Message


@pytest.mark.rocketmq_fault("send", "drop", topic="Orders", stored=True, times=1)   # stored, its answer lost
def test_a_charge_sent_twice_is_charged_once(rocketmq_broker, rocketmq_producer, rocketmq_consumer, time_travel):
    rocketmq_broker.create_topic("Orders", queues=1)
    rocketmq_producer().send(Message("Orders", b"charge-1"))    # times out, the retry stores it again
    assert len(rocketmq_broker.messages("Orders")) == 2
    deliveries, charged = [], set()

    def on_orders(msgs, context):
        for msg in msgs:
            deliveries.append(msg.msg_id)
            charged.add(msg.msg_id)                               # idempotent: keyed by the message's id
        return ConsumeConcurrentlyStatus.CONSUME_SUCCESS

    rocketmq_consumer("billing", "Orders", listener=on_orders)
    time_travel("5s")
    assert len(deliveries) == 2 and len(charged) == 1


def test_a_late_pull_and_a_held_group(rocketmq_broker, rocketmq_producer, rocketmq_consumer, rocketmq_faults,
                                      time_travel):
    rocketmq_broker.create_topic("Orders", queues=1)
    got = []
    rocketmq_consumer("billing", "Orders", listener=lambda msgs, ctx: got.extend(msgs)
                      or ConsumeConcurrentlyStatus.CONSUME_SUCCESS)
    with rocketmq_faults.add("pull", "hold", group="billing") as hold:      # no deliveries to billing
        rocketmq_producer().send(Message("Orders", b"order-1"))
        time_travel("1m")
        assert got == [] and hold.hits > 0
    time_travel("1s")                                                       # released
    assert [m.body for m in got] == [b"order-1"]
# --- README example: end ---


def test_the_readme_snippet_is_this_test():
    assert_readme_shows(__file__)
