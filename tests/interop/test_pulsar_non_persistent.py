"""The real Python Pulsar client (pulsar-client 3.13.0) on non-persistent topics (issue 51,
item 4): a message reaches the consumers connected when it is sent and no one else,
nothing is stored, the regex subscription modes see the topics of their domain (the
client's own test_regex_subscription scenario, written here in this suite's style), and
what Pulsar refuses on such a topic is refused with its error."""
from __future__ import annotations

import re

import pytest

pulsar = pytest.importorskip("pulsar", reason="needs pulsar-client: ./dev test installs it")

from tests.interop.test_pulsar_client import broker, client_of  # noqa: E402,F401  (the fixture, shared)

pytestmark = pytest.mark.interop
LIVE = "non-persistent://public/default/live"


def test_a_message_reaches_the_consumers_connected_when_it_is_sent_and_is_never_stored(broker):
    core, server, on_loop = broker
    client = client_of(server)
    try:
        consumer = client.subscribe(LIVE, "watch", consumer_type=pulsar.ConsumerType.Shared)
        producer = client.create_producer(LIVE)
        ids = [producer.send(b"tick-%d" % i) for i in range(3)]
        assert {(m.ledger_id(), m.entry_id()) for m in ids} == {(0, 0)}      # Pulsar's receipt on such a topic
        got = [consumer.receive(5000) for _ in range(3)]
        assert [m.data() for m in got] == [b"tick-0", b"tick-1", b"tick-2"]
        assert got[0].topic_name() == LIVE
        for m in got:
            consumer.acknowledge(m)                 # (the client sends no ACK here; nothing to ack anyway)
    finally:
        client.close()
    assert on_loop(lambda: [t for t in core.topics.table if "live" in t]) == []      # no store topic was made


def test_a_consumer_that_is_not_connected_misses_the_message(broker):
    core, server, on_loop = broker
    client = client_of(server)
    try:
        producer = client.create_producer(LIVE)
        producer.send(b"before anyone listened")
        consumer = client.subscribe(LIVE, "late", initial_position=pulsar.InitialPosition.Earliest)
        producer.send(b"after")
        assert consumer.receive(5000).data() == b"after"
        consumer.close()
        producer.send(b"while it was away")
        back = client.subscribe(LIVE, "late")       # the same (durable) subscription: nothing was kept for it
        producer.send(b"once back")
        assert back.receive(5000).data() == b"once back"
        with pytest.raises(pulsar.Timeout):
            back.receive(200)
        reader = client.create_reader(LIVE, pulsar.MessageId.earliest)      # earliest is now: nothing older
        producer.send(b"for the reader")
        assert reader.read_next(5000).data() == b"for the reader"
    finally:
        client.close()


def test_regex_subscription_modes_see_the_topics_of_their_domain(broker):
    """The official client's test_regex_subscription scenario: three subscriptions on one
    pattern, AllTopics, PersistentOnly and NonPersistentOnly, over two persistent topics,
    one non-persistent, and one persistent topic the pattern does not match."""
    core, server, on_loop = broker
    client = client_of(server)
    ours = ["persistent://public/default/regex-sub-1", "persistent://public/default/regex-sub-2",
            "non-persistent://public/default/regex-sub-3"]
    other = "persistent://public/default/unmatched-regex-sub-4"
    try:
        producers = {t: client.create_producer(t) for t in ours + [other]}
        pattern = re.compile("public/default/regex-sub-.*")
        modes = {"all": pulsar.RegexSubscriptionMode.AllTopics,
                 "persistent": pulsar.RegexSubscriptionMode.PersistentOnly,
                 "non-persistent": pulsar.RegexSubscriptionMode.NonPersistentOnly}
        consumers = {name: client.subscribe(pattern, f"regex-{name}", consumer_type=pulsar.ConsumerType.Shared,
                                            regex_subscription_mode=mode)
                     for name, mode in modes.items()}
        for i in range(5):
            for topic, producer in producers.items():
                producer.send(b"%s-%d" % (topic.encode(), i))
        expected = {"all": set(ours), "persistent": set(ours[:2]), "non-persistent": {ours[2]}}
        for name, consumer in consumers.items():
            seen = []
            for _ in range(5 * len(expected[name])):
                m = consumer.receive(5000)
                seen.append(m.topic_name())
                consumer.acknowledge(m)
            assert set(seen) == expected[name], name
            assert sorted(seen) == sorted(t for t in expected[name] for _ in range(5))
            with pytest.raises(pulsar.Timeout):
                consumer.receive(200)
    finally:
        client.close()


def test_what_pulsar_refuses_on_a_non_persistent_topic_is_refused_with_its_error(broker):
    core, server, on_loop = broker
    client = client_of(server)
    try:
        consumer = client.subscribe(LIVE, "ids")
        with pytest.raises(pulsar.NotAllowedError):
            consumer.get_last_message_id()
        consumer.seek(pulsar.MessageId.earliest)       # taken, as Pulsar takes it: there is nothing to go back to
        producer = client.create_producer(LIVE, producer_name="only-one")
        with pytest.raises(pulsar.ProducerBusy):
            client.create_producer(LIVE, producer_name="only-one")
        producer.send(b"still served")
        assert consumer.receive(5000).data() == b"still served"
    finally:
        client.close()
