"""Multi-topic and partitioned consumers and readers over partitioned topics made through
REST (issue 41, item 10), with the real client against `serve`: a consumer of a topics
list (a partitioned topic and a plain one), Shared and Failover consumers of a
partitioned topic, key routing, readers of a partitioned topic from the start and from
the end, and an unsubscribe."""
from __future__ import annotations

import pytest

from tests.support.pulsar_http import client_of, http, serve_pulsar

pulsar = pytest.importorskip("pulsar", reason="needs pulsar-client: ./dev test installs it")
pytestmark = pytest.mark.interop
NS = "/admin/v2/persistent/public/default"


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    s = serve_pulsar(tmp_path_factory.mktemp("parts") / "store")
    for name, n in (("events", 3), ("audit", 2), ("keyed", 4), ("readable", 3)):
        assert http(s.http_port, "PUT", f"{NS}/{name}/partitions", n) == (204, None)
    yield s
    s.stop()


@pytest.fixture
def client(server):
    c = client_of(server)
    yield c
    c.close()


def test_a_consumer_of_a_topic_list_reads_a_partitioned_and_a_plain_topic(client):
    consumer = client.subscribe(["events", "plain-events"], "all", consumer_type=pulsar.ConsumerType.Shared,
                                initial_position=pulsar.InitialPosition.Earliest)
    p = client.create_producer("events", message_routing_mode=pulsar.PartitionsRoutingMode.RoundRobinDistribution)
    for i in range(6):
        p.send(b"e%d" % i)
    client.create_producer("plain-events").send(b"plain")
    got = [consumer.receive(5000) for _ in range(7)]
    assert sorted(m.data() for m in got) == [b"e%d" % i for i in range(6)] + [b"plain"]
    assert {m.topic_name() for m in got} == {f"persistent://public/default/events-partition-{i}" for i in range(3)} \
        | {"persistent://public/default/plain-events"}
    for m in got:
        consumer.acknowledge(m)
    consumer.close()
    again = client.subscribe(["events", "plain-events"], "all", consumer_type=pulsar.ConsumerType.Shared)
    with pytest.raises(pulsar.Timeout):
        again.receive(300)                           # all acknowledged, on every partition


def test_failover_consumers_of_a_partitioned_topic_share_its_partitions(client):
    a = client.subscribe("audit", "fo", consumer_type=pulsar.ConsumerType.Failover, consumer_name="a",
                         initial_position=pulsar.InitialPosition.Earliest)
    b = client.subscribe("audit", "fo", consumer_type=pulsar.ConsumerType.Failover, consumer_name="b",
                         initial_position=pulsar.InitialPosition.Earliest)
    p = client.create_producer("audit", message_routing_mode=pulsar.PartitionsRoutingMode.RoundRobinDistribution)
    for i in range(4):
        p.send(b"a%d" % i)
    seen = []
    for consumer in (a, b):
        while True:
            try:
                seen.append(consumer.receive(500).data())
            except pulsar.Timeout:
                break
    assert sorted(seen) == [b"a%d" % i for i in range(4)]           # each once, whoever is active


def test_the_same_key_goes_to_the_same_partition(client):
    p = client.create_producer("keyed")
    ids = [p.send(b"k", partition_key="customer-7") for _ in range(5)]
    assert len({m.partition() for m in ids}) == 1
    others = {p.send(b"k", partition_key=f"customer-{i}").partition() for i in range(40)}
    assert len(others) > 1


def test_readers_of_a_partitioned_topic_from_the_start_and_from_the_end(client):
    p = client.create_producer("readable", message_routing_mode=pulsar.PartitionsRoutingMode.RoundRobinDistribution)
    for i in range(6):
        p.send(b"r%d" % i)
    reader = client.create_reader("readable", pulsar.MessageId.earliest)
    got = []
    while reader.has_message_available():
        got.append(reader.read_next(5000).data())
    assert sorted(got) == [b"r%d" % i for i in range(6)]
    latest = client.create_reader("readable", pulsar.MessageId.latest)
    assert not latest.has_message_available()
    p.send(b"new")
    assert latest.read_next(5000).data() == b"new"


def test_unsubscribing_a_partitioned_consumer_deletes_the_subscription_on_every_partition(server, client):
    # (from the latest position: nothing is dispatched to it while it unsubscribes. From the
    # earliest, the partitions' messages arrive during the unsubscribe, and pulsar-client
    # 3.13.0 crashed the test process with SIGSEGV inside unsubscribe() about once in 30
    # runs here, also on a branch whose Pulsar code for this test is 05e806b's: the client's
    # race, not what this test is about; 0 in 45 runs from the latest position)
    consumer = client.subscribe("events", "temporary", initial_position=pulsar.InitialPosition.Latest)
    assert all("temporary" in http(server.http_port, "GET", f"{NS}/events-partition-{i}/subscriptions")[1]
               for i in range(3))
    consumer.unsubscribe()
    assert all("temporary" not in http(server.http_port, "GET", f"{NS}/events-partition-{i}/subscriptions")[1]
               for i in range(3))
