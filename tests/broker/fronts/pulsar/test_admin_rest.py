"""Pulsar's admin REST API on `serve`'s HTTP front (issue 41, item 1), as a Pulsar user's test
setup calls it, with the real pulsar-client 3.13.0 producing and consuming on what it made:
partitioned and non-partitioned topics, topic lists, stats and internal stats,
subscriptions (made at a position, skipped, reset by time, deleted), tenants, namespaces
and their policies, and the HTTP front's access rules on these paths."""
from __future__ import annotations

import pytest

from tests.support.pulsar_http import client_of, http, serve_pulsar

pulsar = pytest.importorskip("pulsar", reason="needs pulsar-client: ./dev test installs it")
pytestmark = pytest.mark.interop

NS = "/admin/v2/persistent/public/default"


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    s = serve_pulsar(tmp_path_factory.mktemp("admin") / "store")
    yield s
    s.stop()


@pytest.fixture
def client(server):
    c = client_of(server)
    yield c
    c.close()


def test_a_partitioned_topic_made_through_rest_takes_the_real_clients_messages(server, client):
    port = server.http_port
    assert http(port, "PUT", f"{NS}/orders/partitions", 3) == (204, None)
    assert http(port, "PUT", f"{NS}/orders/partitions", 3) == (409, {"reason": "This topic already exists"})
    assert http(port, "GET", f"{NS}/orders/partitions") == (200, {"partitions": 3})
    assert http(port, "GET", f"{NS}/never-made/partitions") == (200, {"partitions": 0})
    producer = client.create_producer("orders", message_routing_mode=pulsar.PartitionsRoutingMode.RoundRobinDistribution)
    ids = [producer.send(b"o%d" % i) for i in range(6)]
    assert sorted(m.partition() for m in ids) == [0, 0, 1, 1, 2, 2]
    consumer = client.subscribe("orders", "billing", initial_position=pulsar.InitialPosition.Earliest)
    assert sorted(consumer.receive(5000).data() for _ in range(6)) == [b"o%d" % i for i in range(6)]
    status, topics = http(port, "GET", NS)
    assert status == 200 and {f"persistent://public/default/orders-partition-{i}" for i in range(3)} <= set(topics)
    assert "persistent://public/default/orders" in http(port, "GET", f"{NS}/partitioned")[1]
    # more partitions: the client's next lookup sees them
    assert http(port, "POST", f"{NS}/orders/partitions", 2)[0] == 412       # fewer is refused
    assert http(port, "POST", f"{NS}/orders/partitions", 4) == (204, None)
    assert http(port, "GET", f"{NS}/orders/partitions") == (200, {"partitions": 4})
    # deleting a topic with clients on it needs force, as Pulsar's does
    assert http(port, "DELETE", f"{NS}/orders/partitions") == (412, {"reason": "Topic has active "
                                                                               "producers/subscriptions"})
    consumer.close()
    producer.close()
    assert http(port, "DELETE", f"{NS}/orders/partitions") == (204, None)
    assert http(port, "GET", f"{NS}/orders/partitions") == (200, {"partitions": 0})
    assert http(port, "DELETE", f"{NS}/orders/partitions") == (404, {"reason": "Partitioned topic does not exist"})
    # made again under the same name: empty, nothing of before comes back
    assert http(port, "PUT", f"{NS}/orders/partitions", 2) == (204, None)
    reader = client.create_reader("orders", pulsar.MessageId.earliest)
    client.create_producer("orders").send(b"after")
    assert reader.read_next(5000).data() == b"after"
    assert not reader.has_message_available()


def test_a_non_partitioned_topic_is_made_listed_and_deleted_with_force(server, client):
    port = server.http_port
    assert http(port, "PUT", f"{NS}/plain") == (204, None)
    assert http(port, "PUT", f"{NS}/plain") == (409, {"reason": "This topic already exists"})
    assert http(port, "PUT", f"{NS}/plain/partitions", 2) == (409, {"reason": "This topic already exists"})
    assert "persistent://public/default/plain" in http(port, "GET", NS)[1]
    consumer = client.subscribe("plain", "s", initial_position=pulsar.InitialPosition.Earliest)
    client.create_producer("plain").send(b"kept")
    assert consumer.receive(5000).data() == b"kept"
    assert http(port, "DELETE", f"{NS}/plain")[0] == 412
    assert http(port, "DELETE", f"{NS}/plain?force=true") == (204, None)
    assert http(port, "GET", f"{NS}/plain/stats") == (404, {"reason": "Topic not found"})
    assert "persistent://public/default/plain" not in http(port, "GET", NS)[1]


def test_bad_requests_get_pulsars_status_and_reason(server):
    port = server.http_port
    assert http(port, "PUT", f"{NS}/zero/partitions", 0) == (406, {"reason": "Number of partitions should be more "
                                                                             "than 0"})
    assert http(port, "PUT", f"{NS}/p-partition-1/partitions", 2)[0] == 412
    assert http(port, "PUT", f"{NS}/words/partitions", "three")[0] == 400
    assert http(port, "PUT", f"{NS}/digits/partitions", "2") == (204, None)         # a number as text, as Jackson
    assert http(port, "PUT", f"{NS}/raw/partitions", raw=b"{not json",
                headers={"Content-Type": "application/json"}) == (400, {"reason": "the body is not JSON"})
    assert http(port, "GET", f"{NS}/missing/internalStats") == (404, {"reason": "Topic not found"})
    assert http(port, "DELETE", f"{NS}/missing") == (404, {"reason": "Topic not found"})
    assert http(port, "GET", f"{NS}/missing/subscriptions") == (404, {"reason": "Topic not found"})
    assert http(port, "DELETE", f"{NS}/digits/subscription/none") == (404, {"reason": "Subscription not found"})
    assert http(port, "GET", "/admin/v2/persistent/public/nowhere")[0] == 404


def test_stats_and_internal_stats_show_backlog_subscriptions_consumers_and_rates(server, client):
    port = server.http_port
    producer = client.create_producer("stats-topic", producer_name="stats-producer")
    for i in range(5):
        producer.send(b"s%d" % i)
    consumer = client.subscribe("stats-topic", "reader-sub", consumer_name="the-consumer",
                                initial_position=pulsar.InitialPosition.Earliest)
    for _ in range(2):
        consumer.acknowledge(consumer.receive(5000))
    consumer.close()                          # (flushes the acks)
    consumer = client.subscribe("stats-topic", "reader-sub", consumer_name="the-consumer")
    status, stats = http(port, "GET", f"{NS}/stats-topic/stats")
    assert status == 200
    assert stats["msgInCounter"] == 5 and stats["storageSize"] > 0 and stats["deduplicationStatus"] == "Disabled"
    assert [p["producerName"] for p in stats["publishers"]] == ["stats-producer"]
    sub = stats["subscriptions"]["reader-sub"]
    assert sub["msgBacklog"] == 3 and sub["type"] == "Exclusive" and sub["isDurable"]
    assert [c["consumerName"] for c in sub["consumers"]] == ["the-consumer"]
    for i in range(5, 10):
        producer.send(b"s%d" % i)
    status, stats = http(port, "GET", f"{NS}/stats-topic/stats")
    assert stats["msgInCounter"] == 10 and stats["msgRateIn"] > 0          # 5 since the last stats
    status, internal = http(port, "GET", f"{NS}/stats-topic/internalStats")
    ledger = consumer.get_last_message_id().ledger_id()
    assert internal["numberOfEntries"] == 10 and internal["lastConfirmedEntry"] == f"{ledger}:9"
    assert internal["cursors"]["reader-sub"]["markDeletePosition"] == f"{ledger}:1"
    assert http(port, "GET", f"{NS}/stats-topic/lastMessageId")[1] == {"ledgerId": ledger, "entryId": 9,
                                                                      "partitionIndex": -1}


def test_subscriptions_are_made_at_a_position_skipped_reset_by_time_and_deleted(server, client):
    port = server.http_port
    producer = client.create_producer("subs-topic")
    ids = [producer.send(b"m%d" % i) for i in range(10)]
    assert http(port, "PUT", f"{NS}/subs-topic/subscription/from-start", {"ledgerId": -1, "entryId": -1}) == \
        (204, None)
    assert http(port, "PUT", f"{NS}/subs-topic/subscription/from-start")[0] == 409
    assert http(port, "PUT", f"{NS}/subs-topic/subscription/from-now") == (204, None)          # latest
    assert http(port, "PUT", f"{NS}/subs-topic/subscription/from-3",
                {"ledgerId": ids[3].ledger_id(), "entryId": ids[3].entry_id()}) == (204, None)
    assert set(http(port, "GET", f"{NS}/subs-topic/subscriptions")[1]) == {"from-start", "from-now", "from-3"}
    # the consumer's own initial position (Latest) does not apply: the subscription exists
    start = client.subscribe("subs-topic", "from-start")
    everything = [start.receive(5000) for _ in range(10)]
    assert [m.data() for m in everything] == [b"m%d" % i for i in range(10)]
    three = client.subscribe("subs-topic", "from-3")
    assert three.receive(5000).data() == b"m3"
    now = client.subscribe("subs-topic", "from-now")
    with pytest.raises(pulsar.Timeout):
        now.receive(300)
    # skip from a subscription at the start, then all of its backlog
    assert http(port, "PUT", f"{NS}/subs-topic/subscription/skipper", {"ledgerId": -1, "entryId": -1})[0] == 204
    assert http(port, "POST", f"{NS}/subs-topic/subscription/skipper/skip/2") == (204, None)
    assert http(port, "GET", f"{NS}/subs-topic/stats")[1]["subscriptions"]["skipper"]["msgBacklog"] == 8
    skipper = client.subscribe("subs-topic", "skipper")
    assert skipper.receive(5000).data() == b"m2"
    skipper.close()
    assert http(port, "POST", f"{NS}/subs-topic/subscription/skipper/skip_all") == (204, None)
    assert http(port, "GET", f"{NS}/subs-topic/stats")[1]["subscriptions"]["skipper"]["msgBacklog"] == 0
    assert http(port, "POST", f"{NS}/subs-topic/subscription/nobody/skip/1") == \
        (404, {"reason": "Subscription not found"})
    # reset by publish time with its consumer connected: it is sent back to the first
    # message published at or after that time
    later = [three.receive(5000) for _ in range(6)]                      # m4 .. m9
    t = later[1].publish_timestamp()                                     # m5's
    assert http(port, "POST", f"{NS}/subs-topic/subscription/from-3/resetcursor/{t}") == (204, None)
    again = three.receive(5000)
    assert again.data() == next(m for m in everything if m.publish_timestamp() >= t).data()
    assert http(port, "POST", f"{NS}/subs-topic/subscription/nobody/resetcursor/{t}") == \
        (404, {"reason": "Subscription not found"})
    assert http(port, "DELETE", f"{NS}/subs-topic/subscription/from-3") == \
        (412, {"reason": "Subscription has active connected consumers"})
    assert http(port, "DELETE", f"{NS}/subs-topic/subscription/from-3?force=true") == (204, None)
    assert "from-3" not in http(port, "GET", f"{NS}/subs-topic/subscriptions")[1]


def test_tenants_namespaces_and_their_policies(server):
    port = server.http_port
    assert http(port, "GET", "/admin/v2/clusters") == (200, ["standalone"])
    assert http(port, "PUT", "/admin/v2/tenants/shop", {"allowedClusters": ["standalone"]}) == (204, None)
    assert http(port, "PUT", "/admin/v2/tenants/shop", {})[0] == 409
    assert "shop" in http(port, "GET", "/admin/v2/tenants")[1]
    assert http(port, "PUT", "/admin/v2/namespaces/nobody/eu") == (404, {"reason": "Tenant does not exist"})
    assert http(port, "PUT", "/admin/v2/namespaces/shop/eu") == (204, None)
    assert http(port, "PUT", "/admin/v2/namespaces/shop/eu")[0] == 409
    assert http(port, "GET", "/admin/v2/namespaces/shop") == (200, ["shop/eu"])
    assert http(port, "GET", "/admin/v2/namespaces/shop/eu/deduplication") == (204, None)
    assert http(port, "POST", "/admin/v2/namespaces/shop/eu/deduplication", True) == (204, None)
    assert http(port, "GET", "/admin/v2/namespaces/shop/eu/deduplication") == (200, True)
    retention = {"retentionTimeInMinutes": 60, "retentionSizeInMB": 100}
    assert http(port, "POST", "/admin/v2/namespaces/shop/eu/retention", retention) == (204, None)
    assert http(port, "GET", "/admin/v2/namespaces/shop/eu/retention") == (200, retention)
    assert http(port, "PUT", "/admin/v2/namespaces/shop/eu/compactionThreshold", 1024) == (204, None)
    assert http(port, "GET", "/admin/v2/namespaces/shop/eu/compactionThreshold") == (200, 1024)
    assert http(port, "DELETE", "/admin/v2/namespaces/shop/eu/compactionThreshold") == (204, None)
    assert http(port, "GET", "/admin/v2/namespaces/shop/eu/compactionThreshold") == (204, None)
    assert http(port, "POST", "/admin/v2/namespaces/shop/nowhere/deduplication", True)[0] == 404
    assert http(port, "DELETE", "/admin/v2/tenants/shop")[0] == 409                # it has a namespace
    assert http(port, "DELETE", "/admin/v2/namespaces/shop/eu") == (204, None)
    assert http(port, "DELETE", "/admin/v2/tenants/shop") == (204, None)


def test_the_http_fronts_access_rules_hold_on_the_admin_paths(server):
    port = server.http_port
    assert http(port, "GET", NS, headers={"Host": "evil.example"})[0] == 421
    assert http(port, "PUT", f"{NS}/csrf/partitions", 2, headers={"Origin": "http://evil.example"})[0] == 403
    assert http(port, "PUT", f"{NS}/csrf/partitions", raw=b"2", headers={"Content-Type": "text/plain"})[0] == 415
    assert http(port, "PUT", f"{NS}/csrf", raw=b"",
                headers={"Content-Type": "application/x-www-form-urlencoded"})[0] == 415
    assert http(port, "GET", f"{NS}/csrf/partitions") == (200, {"partitions": 0})     # nothing was made
    assert http(port, "PUT", f"{NS}/curl-made") == (204, None)       # no Content-Type at all, as curl -X PUT


def test_with_a_token_the_admin_paths_want_it(tmp_path):
    server = serve_pulsar(tmp_path / "store", "--http-token", "s3cret")
    try:
        port = server.http_port
        assert http(port, "PUT", f"{NS}/t/partitions", 2)[0] == 401
        assert http(port, "PUT", f"{NS}/t/partitions", 2, headers={"Authorization": "Bearer s3cret"}) == (204, None)
        assert http(port, "GET", f"{NS}/t/partitions", headers={"Authorization": "Bearer s3cret"})[1] == \
            {"partitions": 2}
    finally:
        server.stop()
