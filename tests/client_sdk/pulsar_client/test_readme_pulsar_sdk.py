"""The README's Pulsar SDK example, verbatim (README.md), run as a test; the last test
keeps the snippet and this file identical."""

import pytest

pytest.importorskip("google_crc32c", reason="needs the pulsar extra: ./dev test installs it")

from tests.support.readme import assert_readme_shows

# --- README example: begin ---
from rocketmq_emulator.client_sdk.pulsar_client import ConsumerType, DeadLetterPolicy, InitialPosition


def test_a_poison_order_climbs_the_retry_ladder_into_the_dlq(pulsar_client, time_travel):
    consumer = pulsar_client.subscribe("orders", "billing", consumer_type=ConsumerType.Shared,
                                       enable_retry=True, dead_letter_policy=DeadLetterPolicy(max_redeliver_count=3))
    pulsar_client.create_producer("orders").send(b"poison", {"order": "17"})

    attempts = []
    for _ in range(4):                             # the first delivery and 3 retries, 1 s, 5 s, 10 s apart
        msg = consumer.receive()                   # waits on the virtual clock: milliseconds of real time
        attempts.append(msg.properties().get("RECONSUMETIMES"))
        consumer.reconsume_later(msg)              # the next level: 1s 5s 10s 30s 1m ... 2h
    assert attempts == [None, "1", "2", "3"]

    dlq = pulsar_client.subscribe("orders-billing-DLQ", "audit", initial_position=InitialPosition.Earliest)
    dead = dlq.receive()
    assert dead.data() == b"poison" and dead.properties()["RECONSUMETIMES"] == "4"
    assert dead.properties()["REAL_TOPIC"] == "persistent://public/default/orders"
# --- README example: end ---


def test_the_readme_snippet_is_this_test():
    assert_readme_shows(__file__)
