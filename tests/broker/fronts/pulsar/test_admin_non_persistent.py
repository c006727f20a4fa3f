"""Pulsar's admin REST API for non-persistent topics on `serve` (issue 51, item 4): a
partitioned non-persistent topic made through REST and used by the real pulsar-client
3.13.0, the namespace's lists by mode, stats with what was dropped, Pulsar's refusals."""
from __future__ import annotations

import pytest

from tests.support.pulsar_http import client_of, http, serve_pulsar

pulsar = pytest.importorskip("pulsar", reason="needs pulsar-client: ./dev test installs it")
pytestmark = pytest.mark.interop

LIVE = "/admin/v2/non-persistent/public/default"


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    s = serve_pulsar(tmp_path_factory.mktemp("admin-live") / "store")
    yield s
    s.stop()


def test_a_partitioned_non_persistent_topic_made_through_rest_serves_the_real_client(server):
    port = server.http_port
    assert http(port, "PUT", f"{LIVE}/ticks/partitions", 2) == (204, None)
    assert http(port, "PUT", f"{LIVE}/ticks/partitions", 2) == (409, {"reason": "This topic already exists"})
    assert http(port, "GET", f"{LIVE}/ticks/partitions") == (200, {"partitions": 2})
    assert http(port, "PUT", f"{LIVE}/none/partitions", 0)[0] == 406
    assert http(port, "GET", f"{LIVE}/partitioned") == (200, ["non-persistent://public/default/ticks"])
    client = client_of(server)
    try:
        consumer = client.subscribe("non-persistent://public/default/ticks", "watch",
                                    consumer_type=pulsar.ConsumerType.Shared)
        producer = client.create_producer("non-persistent://public/default/ticks",
                                          message_routing_mode=pulsar.PartitionsRoutingMode.RoundRobinDistribution)
        ids = [producer.send(b"t%d" % i) for i in range(4)]
        assert sorted(m.partition() for m in ids) == [0, 0, 1, 1]
        assert sorted(consumer.receive(5000).data() for _ in range(4)) == [b"t%d" % i for i in range(4)]
        parts = [f"non-persistent://public/default/ticks-partition-{i}" for i in range(2)]
        assert http(port, "GET", LIVE) == (200, parts)
        status, listed = http(port, "GET", "/admin/v2/namespaces/public/default/topics?mode=ALL")
        assert status == 200 and set(parts) <= set(listed)
        assert http(port, "GET", "/admin/v2/namespaces/public/default/topics?mode=NON_PERSISTENT") == (200, parts)
        status, stats = http(port, "GET", f"{LIVE}/ticks-partition-0/stats")
        assert status == 200 and stats["msgInCounter"] == 2 and stats["storageSize"] == 0
        assert stats["subscriptions"]["watch"]["msgOutCounter"] == 2
        assert stats["subscriptions"]["watch"]["type"] == "Shared"
        status, total = http(port, "GET", f"{LIVE}/ticks/partitioned-stats")
        assert status == 200 and total["msgInCounter"] == 4 and total["metadata"] == {"partitions": 2}
        assert http(port, "GET", "/lookup/v2/topic/non-persistent/public/default/ticks")[0] == 200
    finally:
        client.close()
    # the client is gone; its durable subscription stays, without consumers, and keeps the topic loaded
    status, stats = http(port, "GET", f"{LIVE}/ticks-partition-1/stats")
    assert status == 200 and stats["publishers"] == [] and stats["subscriptions"]["watch"]["consumers"] == []
    assert http(port, "GET", f"{LIVE}/never-loaded/stats") == (404, {"reason": "Topic not found"})
    assert http(port, "GET", f"{LIVE}/never-loaded/partitioned-stats")[0] == 404
    assert http(port, "GET", "/admin/v2/non-persistent/public/nowhere")[0] == 404


def test_a_non_persistent_topic_made_read_and_deleted_through_rest(server):
    """PUT .../{topic}, GET .../internalStats (Pulsar's for a non-persistent topic: only
    entriesAddedCounter and an empty cursor per subscription), DELETE .../{topic} refused
    while clients are on it, done with ?force=true (the clients come back), and once they left."""
    port = server.http_port
    assert http(port, "PUT", f"{LIVE}/solo") == (204, None)
    assert http(port, "PUT", f"{LIVE}/solo") == (409, {"reason": "This topic already exists"})
    assert "non-persistent://public/default/solo" in http(port, "GET", LIVE)[1]
    status, internal = http(port, "GET", f"{LIVE}/solo/internalStats")
    assert status == 200 and internal["entriesAddedCounter"] == 0 and internal["cursors"] == {}
    assert internal["numberOfEntries"] == 0 and internal["ledgers"] == []
    client = client_of(server)
    try:
        consumer = client.subscribe("non-persistent://public/default/solo", "sub-b")
        client.subscribe("non-persistent://public/default/solo", "sub-a")
        producer = client.create_producer("non-persistent://public/default/solo", batching_enabled=False)
        for i in range(3):
            producer.send(b"m%d" % i)
        assert consumer.receive(5000).data() == b"m0"
        status, internal = http(port, "GET", f"{LIVE}/solo/internalStats")
        assert status == 200 and internal["entriesAddedCounter"] == 3
        assert list(internal["cursors"]) == ["sub-a", "sub-b"]
        assert internal["cursors"]["sub-a"]["messagesConsumedCounter"] == 0
        assert http(port, "DELETE", f"{LIVE}/solo") == (412, {"reason": "Topic has active producers/subscriptions"})
        assert http(port, "DELETE", f"{LIVE}/solo?force=true") == (204, None)
        producer.send(b"again")         # closed by the broker, the producer came back and made the topic again
        assert http(port, "GET", f"{LIVE}/solo/stats")[1]["msgInCounter"] == 1
    finally:
        client.close()
    assert http(port, "PUT", f"{LIVE}/idle") == (204, None)
    assert http(port, "DELETE", f"{LIVE}/idle") == (204, None)      # no client on it: no force needed
    assert http(port, "GET", f"{LIVE}/idle/stats") == (404, {"reason": "Topic not found"})
    assert http(port, "DELETE", f"{LIVE}/idle") == (404, {"reason": "Topic not found"})
    assert http(port, "GET", f"{LIVE}/idle/internalStats") == (404, {"reason": "Topic not found"})
    assert http(port, "PUT", "/admin/v2/non-persistent/public/nowhere/solo")[0] == 404


def test_a_partitioned_non_persistent_topic_deleted_through_rest(server):
    port = server.http_port
    assert http(port, "PUT", f"{LIVE}/gone/partitions", 3) == (204, None)
    assert http(port, "PUT", f"{LIVE}/gone") == (409, {"reason": "This topic already exists"})
    status, refusal = http(port, "DELETE", f"{LIVE}/gone")
    assert status == 409 and "partitioned" in refusal["reason"]
    assert http(port, "DELETE", f"{LIVE}/gone/partitions") == (204, None)
    assert "non-persistent://public/default/gone" not in http(port, "GET", f"{LIVE}/partitioned")[1]
    assert http(port, "GET", f"{LIVE}/gone/partitions") == (200, {"partitions": 0})
    assert http(port, "DELETE", f"{LIVE}/gone/partitions") == (404, {"reason": "Partitioned topic does not exist"})
