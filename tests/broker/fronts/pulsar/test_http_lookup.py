"""A Pulsar client given `serve`'s HTTP address (issue 41, item 2): it looks up partition
metadata and the owning broker over HTTP (/admin/v2/.../partitions,
/lookup/v2/topic/...) and then produces and consumes on the binary port, as against a
Pulsar standalone's web port. And credentials (token, basic) get an auth-disabled
broker's answer on both ports: accepted, not a hang."""
from __future__ import annotations

import time

import pytest

from tests.support.pulsar_http import http, serve_pulsar

pulsar = pytest.importorskip("pulsar", reason="needs pulsar-client: ./dev test installs it")
pytestmark = pytest.mark.interop


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    s = serve_pulsar(tmp_path_factory.mktemp("lookup") / "store")
    yield s
    s.stop()


def test_the_lookup_answers_as_pulsars_web_service(server):
    status, data = http(server.http_port, "GET", "/lookup/v2/topic/persistent/public/default/anything")
    assert status == 200
    assert data == {"brokerUrl": f"pulsar://127.0.0.1:{server.pulsar_port}",
                    "httpUrl": f"http://127.0.0.1:{server.http_port}",
                    "nativeUrl": f"pulsar://127.0.0.1:{server.pulsar_port}", "brokerUrlSsl": ""}
    assert http(server.http_port, "GET", "/lookup/v2/topic/non-persistent/public/default/x") == (200, data)
    assert http(server.http_port, "GET", "/lookup/v2/topic/transient/public/default/x")[0] == 412


def test_a_client_given_the_http_url_produces_and_consumes_on_plain_and_partitioned_topics(server):
    assert http(server.http_port, "PUT", "/admin/v2/persistent/public/default/by-http/partitions", 2) == (204, None)
    client = pulsar.Client(f"http://127.0.0.1:{server.http_port}", operation_timeout_seconds=10,
                           logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
    try:
        producer = client.create_producer("by-http",
                                          message_routing_mode=pulsar.PartitionsRoutingMode.RoundRobinDistribution)
        ids = [producer.send(b"h%d" % i) for i in range(4)]
        assert sorted(m.partition() for m in ids) == [0, 0, 1, 1]
        consumer = client.subscribe("by-http", "s", initial_position=pulsar.InitialPosition.Earliest)
        assert sorted(consumer.receive(5000).data() for _ in range(4)) == [b"h0", b"h1", b"h2", b"h3"]
        plain = client.subscribe("plain-by-http", "s", initial_position=pulsar.InitialPosition.Earliest)
        client.create_producer("plain-by-http").send(b"one")
        assert plain.receive(5000).data() == b"one"
    finally:
        client.close()


@pytest.mark.parametrize("auth", ["token", "basic"])
@pytest.mark.parametrize("port_kind", ["pulsar", "http"])
def test_credentials_get_an_auth_disabled_brokers_answer_not_a_hang(server, auth, port_kind):
    credentials = pulsar.AuthenticationToken("eyJhbGciOiJub25lIn0.e30.") if auth == "token" \
        else pulsar.AuthenticationBasic("alice", "secret")
    url = f"pulsar://127.0.0.1:{server.pulsar_port}" if port_kind == "pulsar" \
        else f"http://127.0.0.1:{server.http_port}"
    client = pulsar.Client(url, authentication=credentials, operation_timeout_seconds=5,
                           logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
    began = time.monotonic()
    try:
        consumer = client.subscribe(f"auth-{auth}-{port_kind}", "s", initial_position=pulsar.InitialPosition.Earliest)
        client.create_producer(f"auth-{auth}-{port_kind}").send(b"let in")
        assert consumer.receive(5000).data() == b"let in"
    finally:
        client.close()
    assert time.monotonic() - began < 5            # accepted at once: not the operation timeout
