"""Pattern subscriptions (issue 41, item 6): GET_TOPICS_OF_NAMESPACE with the client's pattern
and Pulsar's topics hash, WATCH_TOPIC_LIST watchers told of topics made and deleted (raw
frames: the Java client uses them, the 3.13.0 client polls), and a real client's regex
subscription over existing topics and one made after it subscribed."""
from __future__ import annotations

import re

import pytest

from rocketmq_emulator.broker.pulsar_model import admin as pulsar_admin
from rocketmq_emulator.broker.core import BrokerCore
from rocketmq_emulator.broker.fronts.pulsar import schema as s
from rocketmq_emulator.broker.fronts.pulsar.topic_lists import topics_hash
from rocketmq_emulator.broker.pulsar_model.names import parse_topic
from tests.broker.fronts.pulsar.raw import call, command, connected, producer, pushed

NS = "persistent://public/default/"


def topics_of_namespace(front, conn, **fields):
    [reply] = call(front, conn, command("GET_TOPICS_OF_NAMESPACE", "getTopicsOfNamespace", request_id=9,
                                        namespace="public/default", **fields))
    return reply.getTopicsOfNamespaceResponse


def made(front, conn, *names):
    for i, name in enumerate(names):
        producer(front, conn, NS + name, producer_id=100 + i, request_id=100 + i)


def test_the_topics_hash_is_pulsars_crc32c_as_guava_prints_it():
    # CRC-32C("123456789") = 0xE3069283 (the standard check value), its bytes low first
    assert topics_hash(["123456789"]) == "839206e3"
    assert topics_hash(["b", "a"]) == topics_hash(["a", "b"]) != topics_hash(["a"])


def test_get_topics_of_namespace_filters_by_the_pattern_and_answers_unchanged_to_the_same_hash():
    core = BrokerCore.in_memory()
    front, conn = connected(core=core)
    made(front, conn, "orders-eu", "orders-us", "payments")
    core.pulsar_topics.create_partitioned(parse_topic(NS + "orders-asia"), 2)
    everything = topics_of_namespace(front, conn)
    assert not everything.filtered and everything.changed
    assert set(everything.topics) == {NS + n for n in ("orders-eu", "orders-us", "payments", "orders-asia-partition-0",
                                                       "orders-asia-partition-1")}
    matching = topics_of_namespace(front, conn, topics_pattern=NS + "orders-.*")
    assert matching.filtered and sorted(matching.topics) == [NS + "orders-asia-partition-0",
                                                             NS + "orders-asia-partition-1", NS + "orders-eu",
                                                             NS + "orders-us"]
    assert matching.topics_hash == topics_hash(list(matching.topics))
    same = topics_of_namespace(front, conn, topics_pattern=NS + "orders-.*", topics_hash=matching.topics_hash)
    assert not same.changed and list(same.topics) == []
    too_long = topics_of_namespace(front, conn, topics_pattern=NS + "o" * 60 + ".*")
    assert not too_long.filtered and len(too_long.topics) == 5        # (maxSubscriptionPatternLength = 50)


def test_a_watcher_is_told_of_matching_topics_made_and_deleted_until_it_closes():
    core = BrokerCore.in_memory()
    front, conn = connected(core=core)
    made(front, conn, "orders-1", "other")
    [ok] = call(front, conn, command("WATCH_TOPIC_LIST", "watchTopicList", request_id=3, watcher_id=7,
                                     namespace="public/default", topics_pattern=NS + "orders-.*"))
    w = ok.watchTopicListSuccess
    assert ok.type == s.Type.WATCH_TOPIC_LIST_SUCCESS and (w.request_id, w.watcher_id) == (3, 7)
    assert list(w.topic) == [NS + "orders-1"] and w.topics_hash == topics_hash([NS + "orders-1"])
    _, other_client = connected(front)
    made(front, other_client, "orders-2", "unrelated")
    [update] = pushed(conn)
    u = update.watchTopicUpdate
    assert update.type == s.Type.WATCH_TOPIC_UPDATE and u.watcher_id == 7
    assert list(u.new_topics) == [NS + "orders-2"] and not u.deleted_topics
    assert u.topics_hash == topics_hash([NS + "orders-1", NS + "orders-2"])
    pulsar_admin.delete_topic(core, parse_topic(NS + "orders-1"), force=True, partitioned=False)
    [update] = [c for c in pushed(conn) if c.type == s.Type.WATCH_TOPIC_UPDATE]
    assert list(update.watchTopicUpdate.deleted_topics) == [NS + "orders-1"]
    assert update.watchTopicUpdate.topics_hash == topics_hash([NS + "orders-2"])
    # a watcher that comes back with the hash it has gets no list
    [again] = call(front, conn, command("WATCH_TOPIC_LIST", "watchTopicList", request_id=4, watcher_id=8,
                                        namespace="public/default", topics_pattern=NS + "orders-.*",
                                        topics_hash=topics_hash([NS + "orders-2"])))
    assert list(again.watchTopicListSuccess.topic) == []
    for watcher in (7, 8):
        [closed] = call(front, conn, command("WATCH_TOPIC_LIST_CLOSE", "watchTopicListClose", request_id=5,
                                             watcher_id=watcher))
        assert closed.type == s.Type.SUCCESS
    made(front, other_client, "orders-3")
    assert pushed(conn) == []
    [refused] = call(front, conn, command("WATCH_TOPIC_LIST", "watchTopicList", request_id=6, watcher_id=9,
                                          namespace="public/default", topics_pattern=NS + "x" * 60))
    assert refused.type == s.Type.ERROR and refused.error.error == s.ServerError.NotAllowedError


def test_connected_says_the_broker_serves_topic_watchers():
    front, conn = connected()
    [reply] = call(front, conn, command("CONNECT", "connect", client_version="t", protocol_version=20))
    assert reply.connected.feature_flags.supports_topic_watchers


@pytest.mark.interop
def test_a_real_regex_subscription_reads_existing_topics_and_one_made_later(tmp_path):
    """The 3.13.0 client looks for new topics every 60 s (its Python wrapper does not pass
    pattern_auto_discovery_period on): the new topic's message arrives within that."""
    pulsar = pytest.importorskip("pulsar", reason="needs pulsar-client: ./dev test installs it")
    from tests.support.pulsar_http import client_of, serve_pulsar

    server = serve_pulsar(tmp_path / "store")
    try:
        client = client_of(server)
        client.create_producer("fx-eur").send(b"eur")
        client.create_producer("fx-usd").send(b"usd")
        client.create_producer("rates").send(b"not matched")
        consumer = client.subscribe(re.compile("persistent://public/default/fx-.*"), "quotes",
                                    initial_position=pulsar.InitialPosition.Earliest)
        assert sorted(consumer.receive(5000).data() for _ in range(2)) == [b"eur", b"usd"]
        client.create_producer("fx-jpy").send(b"jpy")
        assert consumer.receive(75_000).data() == b"jpy"
        client.close()
    finally:
        server.stop()
