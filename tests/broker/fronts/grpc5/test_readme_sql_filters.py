"""The README's SQL92 example (pytest guide), verbatim, run as a test: a 4.x SDK consumer
(MessageSelector.by_sql) and the real 5.x SimpleConsumer (FilterType.SQL) on one broker."""
import pytest

pytest.importorskip("rocketmq.grpc_protocol", reason="needs the grpc extra: ./dev test installs it")

from tests.support.readme import assert_readme_shows  # noqa: E402

# --- README example: begin ---
import pytest
from rocketmq import ClientConfiguration, Credentials, FilterExpression, SimpleConsumer
from rocketmq.grpc_protocol import FilterType
from rocketmq_emulator.client_sdk import ConsumeConcurrentlyStatus, Message, MessageSelector

BIG_EU_ORDERS = "region = 'eu' AND amount > 100"


@pytest.mark.rocketmq_broker(enablePropertyFilter=True)        # 4.x SQL92 subscriptions, as upstream
def test_only_big_eu_orders(rocketmq5_endpoint, rocketmq_broker, rocketmq_producer, rocketmq_consumer,
                            time_travel):
    rocketmq_broker.create_topic("Orders", queues=2)
    got = []
    rocketmq_consumer("eu-4x", "Orders", MessageSelector.by_sql(BIG_EU_ORDERS),
                      listener=lambda msgs, ctx: got.extend(msgs) or ConsumeConcurrentlyStatus.CONSUME_SUCCESS)
    consumer5 = SimpleConsumer(ClientConfiguration(rocketmq5_endpoint, Credentials()), "eu-5x",
                               {"Orders": FilterExpression(BIG_EU_ORDERS, FilterType.SQL)}, await_duration=1)
    consumer5.startup()
    producer = rocketmq_producer()
    for region, amount in (("eu", "150"), ("us", "500"), ("eu", "50")):
        producer.send(Message("Orders", f"{region}-{amount}", properties={"region": region, "amount": amount}))
    time_travel("1s")
    assert [m.text for m in got] == ["eu-150"]
    assert [m.body for m in consumer5.receive(16, 30)] == [b"eu-150"]
    consumer5.shutdown()
# --- README example: end ---


def test_the_readme_snippet_is_this_test():
    assert_readme_shows(__file__)
