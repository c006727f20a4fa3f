"""Every seek form against `serve` with the real client (issue 41, item 7): by publish time
(the first message published at or after it: a seek to message 42's time used to go by
the broker's store time), by a message id outside and inside a batch, to earliest and
latest — on a consumer, on a partitioned topic's consumer, and on readers."""
from __future__ import annotations

import pytest

from tests.support.pulsar_http import client_of, http, serve_pulsar

pulsar = pytest.importorskip("pulsar", reason="needs pulsar-client: ./dev test installs it")
pytestmark = pytest.mark.interop


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    s = serve_pulsar(tmp_path_factory.mktemp("seek") / "store")
    yield s
    s.stop()


@pytest.fixture
def client(server):
    c = client_of(server)
    yield c
    c.close()


def published(client, topic, n, **kw):
    producer = client.create_producer(topic, **kw)
    ids = [producer.send(b"m%03d" % i) for i in range(n)]
    producer.close()
    return ids


def test_seek_by_time_goes_to_the_first_message_published_then(client):
    published(client, "by-time", 100)
    consumer = client.subscribe("by-time", "s", initial_position=pulsar.InitialPosition.Earliest)
    everything = [consumer.receive(5000) for _ in range(100)]
    t42 = everything[42].publish_timestamp()
    consumer.seek(t42)
    first = next(m for m in everything if m.publish_timestamp() >= t42)       # m042, or one in its millisecond
    assert consumer.receive(5000).data() == first.data() <= b"m042"
    consumer.seek(everything[-1].publish_timestamp() + 60_000)                # after everything: nothing
    with pytest.raises(pulsar.Timeout):
        consumer.receive(300)


def test_seek_by_message_id_earliest_and_latest(client):
    ids = published(client, "by-id", 10)
    consumer = client.subscribe("by-id", "s", initial_position=pulsar.InitialPosition.Earliest)
    for _ in range(10):
        consumer.acknowledge(consumer.receive(5000))
    consumer.seek(ids[4])
    assert consumer.receive(5000).data() == b"m005"                          # after the id, as the client reads it
    consumer.seek(pulsar.MessageId.earliest)
    assert consumer.receive(5000).data() == b"m000"
    consumer.seek(pulsar.MessageId.latest)
    with pytest.raises(pulsar.Timeout):
        consumer.receive(300)
    published(client, "by-id", 1)
    assert consumer.receive(5000).data() == b"m000"                          # (the new one's body)


def test_seek_to_a_message_inside_a_batch(client):
    producer = client.create_producer("batched", batching_enabled=True, batching_max_messages=5,
                                      batching_max_publish_delay_ms=50)
    done = []
    for i in range(10):
        producer.send_async(b"b%d" % i, lambda res, msg_id: done.append(msg_id))
    producer.flush()
    consumer = client.subscribe("batched", "s", initial_position=pulsar.InitialPosition.Earliest)
    got = [consumer.receive(5000) for _ in range(10)]
    assert [m.data() for m in got] == [b"b%d" % i for i in range(10)]
    inside = got[2].message_id()
    assert inside.batch_index() == 2
    consumer.seek(inside)
    assert consumer.receive(5000).data() == b"b3"                            # the rest of that batch, then on
    assert [consumer.receive(5000).data() for _ in range(6)] == [b"b%d" % i for i in range(4, 10)]


def test_seek_on_a_partitioned_topic_by_time_and_by_a_received_id(server, client):
    assert http(server.http_port, "PUT", "/admin/v2/persistent/public/default/parts/partitions", 3) == (204, None)
    published(client, "parts", 30, message_routing_mode=pulsar.PartitionsRoutingMode.RoundRobinDistribution)
    consumer = client.subscribe("parts", "s", initial_position=pulsar.InitialPosition.Earliest)
    everything = [consumer.receive(5000) for _ in range(30)]
    assert sorted(m.data() for m in everything) == [b"m%03d" % i for i in range(30)]
    t = sorted(everything, key=lambda m: m.data())[20].publish_timestamp()
    consumer.seek(t)
    again = sorted(consumer.receive(5000).data() for _ in range(sum(m.publish_timestamp() >= t for m in everything)))
    assert again == sorted(m.data() for m in everything if m.publish_timestamp() >= t)
    one = next(m for m in everything if m.message_id().partition() == 1)
    consumer.seek(one.message_id())                                         # that partition only
    after = consumer.receive(5000)
    assert after.message_id().partition() == 1 and after.message_id().entry_id() == one.message_id().entry_id() + 1


def test_readers_seek_by_id_and_by_time(client):
    ids = published(client, "read-seek", 10)
    reader = client.create_reader("read-seek", pulsar.MessageId.earliest)
    everything = [reader.read_next(5000) for _ in range(10)]
    reader.seek(ids[6])
    assert reader.read_next(5000).data() == b"m007"
    t = everything[3].publish_timestamp()
    reader.seek(t)
    assert reader.read_next(5000).data() == next(m for m in everything if m.publish_timestamp() >= t).data()
    inclusive = client.create_reader("read-seek", ids[6], start_message_id_inclusive=True)
    assert inclusive.read_next(5000).data() == b"m006"


def test_seek_by_time_on_the_test_brokers_virtual_clock_goes_by_the_publish_time(pulsar_endpoint, time_travel):
    """The pytest fixture's broker stores on its virtual clock; the client stamps publish
    times on its own: a seek by time goes by those, whatever the store's clock says."""
    client = pulsar.Client(pulsar_endpoint, operation_timeout_seconds=10,
                           logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
    try:
        published(client, "virtual-seek", 60)
        time_travel("1h")
        consumer = client.subscribe("virtual-seek", "s", initial_position=pulsar.InitialPosition.Earliest)
        everything = [consumer.receive(5000) for _ in range(60)]
        t42 = everything[42].publish_timestamp()
        consumer.seek(t42)
        assert consumer.receive(5000).data() == next(m for m in everything if m.publish_timestamp() >= t42).data()
    finally:
        client.close()
