"""The SDK's Pulsar consumer in process, on the virtual clock (issue 22; seed 000):
retry letters in the three reconsume_later modes, both namings, Exclusive retrying at
once, negative acks and the dead-letter policy, listener style, and bad input."""
from __future__ import annotations

import pytest

pytest.importorskip("google_crc32c", reason="needs the pulsar extra: ./dev test installs it")

from rocketmq_emulator.client_sdk.pulsar_client import (ConsumerType, DeadLetterPolicy,  # noqa: E402
                                                        InitialPosition, PulsarClientError, PulsarTimeout)

LADDER_S = [1, 5, 10, 30, 60, 120, 180, 240, 300, 360, 420, 480, 540, 600, 1200, 1800, 3600, 7200]


def retrying(client, **kw):
    kw.setdefault("consumer_type", ConsumerType.Shared)
    return client.subscribe("orders", "billing", enable_retry=True, **kw)


def walk(client, consumer, fail, n_max=40):
    """Receive and reconsume_later until nothing comes: [(seconds since start, RECONSUMETIMES, topic)]."""
    t0 = client.now_ms()
    seen = []
    for _ in range(n_max):
        try:
            m = consumer.receive()
        except PulsarTimeout:
            return seen
        seen.append(((client.now_ms() - t0) / 1000, m.properties().get("RECONSUMETIMES"), m.topic_name()))
        fail(consumer, m)
    raise AssertionError(f"still receiving after {n_max}: {seen[-3:]}")


def dead_letters(client, topic="orders-billing-DLQ"):
    reader = client.subscribe(topic, "audit", initial_position=InitialPosition.Earliest)
    out = []
    while True:
        try:
            out.append(reader.receive(timeout_millis=0))
        except PulsarTimeout:
            return out


def test_the_increasing_level_mode_walks_the_ladder_into_the_dlq(pulsar_client, rocketmq_broker):
    consumer = retrying(pulsar_client, dead_letter_policy=DeadLetterPolicy(max_redeliver_count=4))
    pulsar_client.create_producer("orders").send(b"poison", {"order": "17"})
    seen = walk(pulsar_client, consumer, lambda c, m: c.reconsume_later(m))
    # the original, then retries 1..4 at 1 s, 5 s, 10 s, 30 s after each failure; the 5th failure: the DLQ
    assert [s for s, _, _ in seen] == [0, 1, 6, 16, 46]
    assert [t for _, t, _ in seen] == [None, "1", "2", "3", "4"]
    assert {topic for _, _, topic in seen[1:]} == {"persistent://public/default/orders-billing-RETRY"}
    [dead] = dead_letters(pulsar_client)
    props = dead.properties()
    assert (dead.data(), props["order"], props["RECONSUMETIMES"], props["REAL_TOPIC"]) == \
        (b"poison", "17", "5", "persistent://public/default/orders")
    assert props["RETRY_TOPIC"] == "persistent://public/default/orders-billing-RETRY"
    origin = props["ORIGIN_MESSAGE_ID"]
    assert origin.endswith(":0:-1")                           # the first message's id, kept by every copy
    # the store's accounting sees one message, four retries and a dead letter
    from rocketmq_emulator.store.accounting import account_message_store
    a = account_message_store(rocketmq_broker.core.store)
    assert a.summary() == {"produced": 1, "succeeded": 0, "dead_lettered": 1, "send_backs": 5}


def test_the_default_ladder_is_seed_000s_and_16_retries(pulsar_client):
    consumer = retrying(pulsar_client)
    pulsar_client.create_producer("orders").send(b"poison")
    seen = walk(pulsar_client, consumer, lambda c, m: c.reconsume_later(m))
    gaps = [round(b[0] - a[0]) for a, b in zip(seen, seen[1:])]
    assert len(seen) == 17 and gaps == LADDER_S[:16]
    assert dead_letters(pulsar_client)[0].properties()["RECONSUMETIMES"] == "17"


@pytest.mark.parametrize("how, delays", [({"delay_ms": 2500}, [2.5, 2.5]), ({"delay_ms": "90s"}, [90, 90]),
                                         ({"level": 3}, [10, 10])])
def test_a_given_delay_or_level_is_the_wait_of_every_retry(pulsar_client, how, delays):
    consumer = retrying(pulsar_client, dead_letter_policy=DeadLetterPolicy(max_redeliver_count=2))
    pulsar_client.create_producer("orders").send(b"x")
    seen = walk(pulsar_client, consumer, lambda c, m: c.reconsume_later(m, **how))
    assert [round(b[0] - a[0], 3) for a, b in zip(seen, seen[1:])] == delays
    assert len(dead_letters(pulsar_client)) == 1


def test_a_message_that_recovers_stops_retrying(pulsar_client):
    consumer = retrying(pulsar_client)
    pulsar_client.create_producer("orders").send(b"flaky")
    seen = walk(pulsar_client, consumer, lambda c, m: c.reconsume_later(m) if m.properties().get(
        "RECONSUMETIMES") != "2" else c.acknowledge(m))
    assert [t for _, t, _ in seen] == [None, "1", "2"] and dead_letters(pulsar_client) == []


def test_the_older_naming_puts_the_letter_topics_beside_the_subscription(pulsar_client):
    consumer = retrying(pulsar_client, legacy_retry_names=True, dead_letter_policy=DeadLetterPolicy(1))
    assert consumer.retry_topic == "persistent://public/default/billing-RETRY"
    assert consumer.dead_letter_topic == "persistent://public/default/billing-DLQ"
    pulsar_client.create_producer("orders").send(b"x")
    seen = walk(pulsar_client, consumer, lambda c, m: c.reconsume_later(m))
    assert [topic for _, _, topic in seen] == ["persistent://public/default/orders",
                                               "persistent://public/default/billing-RETRY"]
    assert len(dead_letters(pulsar_client, "billing-DLQ")) == 1


@pytest.mark.parametrize("kind", [ConsumerType.Exclusive, ConsumerType.Failover])
def test_exclusive_and_failover_retry_at_once_whatever_the_delay(pulsar_client, kind):
    consumer = retrying(pulsar_client, consumer_type=kind, dead_letter_policy=DeadLetterPolicy(2))
    pulsar_client.create_producer("orders").send(b"x")
    seen = walk(pulsar_client, consumer, lambda c, m: c.reconsume_later(m, delay_ms="1h"))
    assert [s for s, _, _ in seen] == [0, 0, 0] and len(dead_letters(pulsar_client)) == 1


def test_bad_input_is_a_clear_error_and_the_message_is_kept(pulsar_client):
    consumer = retrying(pulsar_client)
    pulsar_client.create_producer("orders").send(b"keep")
    m = consumer.receive()
    with pytest.raises(ValueError, match="1 s to 864,000 s"):
        consumer.reconsume_later(m, delay_ms=500)
    with pytest.raises(ValueError, match="1 s to 864,000 s"):
        consumer.reconsume_later(m, delay_ms="11d")
    with pytest.raises(ValueError, match="a delay level is 1 to 18"):
        consumer.reconsume_later(m, level=19)
    with pytest.raises(ValueError, match="not both"):
        consumer.reconsume_later(m, 2000, level=1)
    plain = pulsar_client.subscribe("orders", "plain", consumer_type=ConsumerType.Shared,
                                    initial_position=InitialPosition.Earliest)
    with pytest.raises(PulsarClientError, match="enable_retry=True"):
        plain.reconsume_later(plain.receive())
    with pytest.raises(PulsarClientError, match="not allowed on Shared"):
        consumer.acknowledge_cumulative(m)
    with pytest.raises(ValueError, match="at least 10000"):
        pulsar_client.subscribe("orders", "quick", unacked_messages_timeout_ms=500)
    with pytest.raises(ValueError, match="max_redeliver_count"):
        DeadLetterPolicy(0)
    consumer.reconsume_later(m, level=1)                      # nothing was lost: it retries as asked
    assert consumer.receive().data() == b"keep"


def test_negative_acks_redeliver_with_counts_then_the_dead_letter_policy(pulsar_client, time_travel):
    consumer = pulsar_client.subscribe("orders", "nacking", consumer_type=ConsumerType.Shared,
                                       negative_ack_redelivery_delay_ms=30_000,
                                       dead_letter_policy=DeadLetterPolicy(2, initial_subscription_name="dlq-audit"))
    pulsar_client.create_producer("orders").send(b"poison")
    t0 = pulsar_client.now_ms()
    counts = []
    for _ in range(3):
        m = consumer.receive()
        counts.append((m.redelivery_count(), (pulsar_client.now_ms() - t0) // 1000))
        consumer.negative_acknowledge(m)
    assert counts == [(0, 0), (1, 30), (2, 60)]
    with pytest.raises(PulsarTimeout):
        consumer.receive()                                    # the third nack moved it to the DLQ
    audit = pulsar_client.subscribe("orders-nacking-DLQ", "dlq-audit")     # made by the DLQ producer
    dead = audit.receive(timeout_millis=0)
    assert dead.data() == b"poison" and dead.properties()["REAL_TOPIC"] == "persistent://public/default/orders"


def test_the_ack_timeout_redelivers_on_the_virtual_clock(pulsar_client, time_travel):
    consumer = pulsar_client.subscribe("orders", "slow", consumer_type=ConsumerType.Shared,
                                       unacked_messages_timeout_ms=60_000)
    pulsar_client.create_producer("orders").send(b"late")
    first = consumer.receive()
    with pytest.raises(PulsarTimeout):
        consumer.receive(timeout_millis=59_000)
    again = consumer.receive(timeout_millis=2_000)
    assert (first.redelivery_count(), again.redelivery_count(), again.data()) == (0, 1, b"late")
    consumer.acknowledge(again)


def test_listener_style_runs_on_the_brokers_loop(pulsar_client, time_travel):
    got = []

    def listener(consumer, message):
        got.append((message.data(), message.properties().get("RECONSUMETIMES")))
        if message.properties().get("RECONSUMETIMES") == "2":
            consumer.acknowledge(message)
        else:
            consumer.reconsume_later(message)

    pulsar_client.subscribe("orders", "billing", consumer_type=ConsumerType.Shared, enable_retry=True,
                            listener=listener)
    pulsar_client.create_producer("orders").send(b"l")
    time_travel("5s")
    assert got == [(b"l", None), (b"l", "1")]
    time_travel("1s")
    assert got[-1] == (b"l", "2")


def test_a_dead_letter_the_broker_refuses_comes_back_after_the_nack_delay(pulsar_client, rocketmq_broker, caplog):
    """The clients fall back to a redelivery when the dead-letter send fails; here after
    the nack delay, so a read-only broker is not asked again and again in one instant."""
    consumer = pulsar_client.subscribe("orders", "stuck", consumer_type=ConsumerType.Shared,
                                       negative_ack_redelivery_delay_ms=10_000, dead_letter_policy=DeadLetterPolicy(1))
    pulsar_client.create_producer("orders").send(b"poison")
    consumer.negative_acknowledge(consumer.receive())
    consumer.negative_acknowledge(consumer.receive())         # count 1: the next step is the DLQ
    rocketmq_broker.set_writeable(False)
    with caplog.at_level("WARNING", logger="client_sdk.pulsar"):
        rocketmq_broker.advance("60s")
    tries = [r for r in caplog.records if "dead letter of" in r.getMessage()]
    assert 4 <= len(tries) <= 7                               # about one per nack delay, not a loop
    rocketmq_broker.set_writeable(True)
    rocketmq_broker.advance("25s")
    assert [d.data() for d in dead_letters(pulsar_client, "orders-stuck-DLQ")] == [b"poison"]


def test_send_async_calls_back_with_the_id_and_delays_on_the_virtual_clock(pulsar_client, time_travel):
    consumer = pulsar_client.subscribe("later", "s", consumer_type=ConsumerType.Shared)
    got = []
    pulsar_client.create_producer("later").send_async(b"in-a-minute", lambda err, mid: got.append((err, mid)),
                                                      {"k": "v"}, deliver_after_ms=60_000)
    pulsar_client.run_until(lambda: got, "1s")
    assert got[0][0] is None and got[0][1].entry_id() == 0
    with pytest.raises(PulsarTimeout):
        consumer.receive(timeout_millis=59_000)
    assert consumer.receive(timeout_millis=2_000).properties() == {"k": "v"}
    with pytest.raises(TypeError):
        pulsar_client.create_producer("later").send_async(b"x", print, deliver_after=5)


def test_an_exclusive_negative_ack_sends_everything_unacknowledged_back(pulsar_client):
    """Exclusive and Failover redeliver everything unacknowledged, in order (Pulsar's
    REDELIVER without ids); the broker counts it (Pulsar does not: its fidelity setting)."""
    consumer = pulsar_client.subscribe("solo", "only", negative_ack_redelivery_delay_ms=1_000)
    producer = pulsar_client.create_producer("solo")
    for body in (b"a", b"b", b"c"):
        producer.send(body)
    first = consumer.receive()
    consumer.acknowledge(consumer.receive())                   # b is done
    consumer.negative_acknowledge(first)
    got = [consumer.receive() for _ in range(3)]               # c at once (already here), then a and c again
    assert [(m.data(), m.redelivery_count()) for m in got] == [(b"c", 0), (b"a", 1), (b"c", 1)]
    for m in got[1:]:
        consumer.acknowledge(m)
    with pytest.raises(PulsarTimeout):
        consumer.receive(timeout_millis=5_000)


def test_key_shared_retries_through_delayed_delivery_like_shared(pulsar_client):
    consumer = retrying(pulsar_client, consumer_type=ConsumerType.KeyShared, dead_letter_policy=DeadLetterPolicy(2))
    pulsar_client.create_producer("orders").send(b"x", partition_key="customer-7")
    seen = walk(pulsar_client, consumer, lambda c, m: c.reconsume_later(m, delay_ms="1h"))
    assert [s for s, _, _ in seen] == [0, 3600, 7200] and len(dead_letters(pulsar_client)) == 1
    assert seen[1][2] == "persistent://public/default/orders-billing-RETRY"


def test_a_cumulative_ack_settles_everything_up_to_the_message(pulsar_client):
    consumer = pulsar_client.subscribe("orders", "ledger", consumer_type=ConsumerType.Exclusive,
                                       initial_position=InitialPosition.Earliest)
    producer = pulsar_client.create_producer("orders")
    for body in (b"a", b"b", b"c", b"d"):
        producer.send(body)
    received = [consumer.receive() for _ in range(4)]
    consumer.acknowledge_cumulative(received[2])              # a, b and c; d stays unacknowledged
    consumer.close()
    again = pulsar_client.subscribe("orders", "ledger", consumer_type=ConsumerType.Exclusive)
    assert again.receive().data() == b"d"
    with pytest.raises(PulsarTimeout):
        again.receive(timeout_millis=0)


def test_a_pulsar_subscriptions_dead_letters_are_listed_and_redriven(pulsar_client, rocketmq_broker):
    """`dlq list/redrive` for a Pulsar subscription: its -DLQ topic's copies go back to the
    topic as new messages: redelivery count 0, no RECONSUMETIMES, the user's properties kept."""
    consumer = pulsar_client.subscribe("orders", "billing", consumer_type=ConsumerType.Shared,
                                       negative_ack_redelivery_delay_ms=1000, dead_letter_policy=DeadLetterPolicy(1))
    pulsar_client.create_producer("orders").send(b"poison", {"order": "17"})
    for _ in range(2):
        consumer.negative_acknowledge(consumer.receive())
    with pytest.raises(PulsarTimeout):
        consumer.receive()                                    # in orders-billing-DLQ now
    [dead] = rocketmq_broker.dead_letters("billing")
    assert dead.original_topic == "persistent://public/default/orders" and dead.redriven_as is None
    [(was, new_id)] = rocketmq_broker.redrive("billing").sent
    again = consumer.receive()
    assert (again.data(), again.redelivery_count()) == (b"poison", 0)
    assert again.properties()["order"] == "17" and "RECONSUMETIMES" not in again.properties()
    assert again.properties()["REDRIVEN_FROM"] == was == dead.offset_msg_id
    assert rocketmq_broker.redrive("billing").already == (was,)
