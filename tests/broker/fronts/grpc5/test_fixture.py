"""The pytest fixture for 5.x users: rocketmq5_endpoint, a real gRPC endpoint in the test
process on the test broker's virtual clock; time_travel moves its invisible times and
delays; 4.x SDK clients and 5.x clients share the broker."""
import pytest

pytest.importorskip("rocketmq.grpc_protocol", reason="needs the grpc extra: ./dev test installs it")

from rocketmq import ClientConfiguration, Credentials, FilterExpression, Message, Producer, SimpleConsumer  # noqa: E402

from rocketmq_emulator.client_sdk import Message as Message4  # noqa: E402


@pytest.fixture
def config(rocketmq5_endpoint):
    return ClientConfiguration(rocketmq5_endpoint, Credentials(), request_timeout=3)


def test_invisible_time_runs_on_the_tests_clock(config, time_travel, rocketmq_broker):
    rocketmq_broker.create_topic("Orders")      # a 5.x route names only topics that exist
    p = Producer(config, ("Orders",))
    p.startup()
    c = SimpleConsumer(config, "billing", {"Orders": FilterExpression("*")}, await_duration=1)
    c.startup()
    try:
        m = Message()
        m.topic, m.body = "Orders", b"order-1"
        p.send(m)
        [first] = c.receive(1, 60)                       # not acked
        assert first.delivery_attempt == 1
        assert c.receive(1, 60) == []
        time_travel("1m")
        [again] = c.receive(1, 60)
        assert again.body == b"order-1" and again.delivery_attempt == 2
        c.ack(again)
    finally:
        c.shutdown()
        p.shutdown()


def test_a_4x_sdk_producer_feeds_a_5x_consumer_on_the_same_broker(config, rocketmq_broker, rocketmq_producer):
    rocketmq_broker.create_topic("Mixed", 1)
    rocketmq_producer().send(Message4("Mixed", b"from 4.x", tags="A"))
    c = SimpleConsumer(config, "reader", {"Mixed": FilterExpression("A")}, await_duration=1)
    c.startup()
    try:
        [m] = c.receive(4, 30)
        assert m.body == b"from 4.x" and m.tag == "A"
        c.ack(m)
        assert rocketmq_broker.committed_offset("reader", "Mixed", 0) == 1
    finally:
        c.shutdown()
