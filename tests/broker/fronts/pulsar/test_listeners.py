"""Advertised listeners (issue 41, item 9): broker.conf's advertisedListeners names the
addresses a lookup may answer; the client's listener_name selects one (binary and HTTP
lookups); a name the broker does not have is refused as Pulsar refuses it (in band:
ServiceNotReady, "the broker do not have <name> listener")."""
from __future__ import annotations

import time

import pytest

from rocketmq_emulator.broker.config import BrokerConfig, ConfigError
from rocketmq_emulator.broker.core import BrokerCore
from rocketmq_emulator.broker.fronts.pulsar import schema as s
from tests.broker.fronts.pulsar.raw import call, command, connected
from tests.support.processes import free_port
from tests.support.pulsar_http import http, serve_pulsar

pulsar = pytest.importorskip("pulsar", reason="needs pulsar-client: ./dev test installs it")


def lookup(front, conn, listener):
    [reply] = call(front, conn, command("LOOKUP", "lookupTopic", topic="persistent://public/default/x", request_id=1,
                                        advertised_listener_name=listener))
    return reply.lookupTopicResponse


def test_raw_frames_a_lookup_answers_the_named_listener_and_refuses_an_unknown_name():
    config = BrokerConfig.from_properties({"advertisedListeners": "internal:pulsar://10.0.0.5:6650,"
                                                                  "external:pulsar://broker.example:16650,"
                                                                  "external:pulsar+ssl://broker.example:16651"})
    front, conn = connected(core=BrokerCore.in_memory(config=config))
    assert lookup(front, conn, "external").brokerServiceUrl == "pulsar://broker.example:16650"
    assert lookup(front, conn, "internal").brokerServiceUrl == "pulsar://10.0.0.5:6650"
    assert lookup(front, conn, "").brokerServiceUrl == "pulsar://127.0.0.1:6650"          # no name: its own
    refused = lookup(front, conn, "nope")
    assert (refused.response, refused.error) == (s.LookupType.Failed, s.ServerError.ServiceNotReady)
    assert refused.message == "the broker do not have nope listener"
    plain, conn2 = connected()
    assert lookup(plain, conn2, "internal").brokerServiceUrl == "pulsar://127.0.0.1:6650"   # the internal one
    with pytest.raises(ConfigError, match="advertisedListeners"):
        BrokerConfig.from_properties({"advertisedListeners": "pulsar://no-name:6650"})
    with pytest.raises(ConfigError, match="two pulsar"):
        BrokerConfig.from_properties({"advertisedListeners": "a:pulsar://h:1,a:pulsar://h:2"})


@pytest.mark.interop
def test_the_real_client_follows_its_listener_name_and_fails_on_one_the_broker_lacks(tmp_path):
    port = free_port()
    conf = f"advertisedListeners=internal:pulsar://127.0.0.1:{port},external:pulsar://localhost:{port}\n"
    server = serve_pulsar(tmp_path / "store", "--pulsar-port", str(port), conf=conf)
    try:
        assert http(server.http_port, "GET", "/lookup/v2/topic/persistent/public/default/t?listenerName=external")[1][
            "brokerUrl"] == f"pulsar://localhost:{port}"
        assert http(server.http_port, "GET", "/lookup/v2/topic/persistent/public/default/t",
                    headers={"X-Pulsar-ListenerName": "internal"})[1]["brokerUrl"] == f"pulsar://127.0.0.1:{port}"
        assert http(server.http_port, "GET", "/lookup/v2/topic/persistent/public/default/t?listenerName=nope") == \
            (503, {"reason": "the broker do not have nope listener"})
        client = pulsar.Client(f"pulsar://127.0.0.1:{port}", listener_name="external", operation_timeout_seconds=10,
                               logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
        consumer = client.subscribe("via-external", "s", initial_position=pulsar.InitialPosition.Earliest)
        client.create_producer("via-external").send(b"through localhost")
        assert consumer.receive(5000).data() == b"through localhost"
        client.close()
        client = pulsar.Client(f"pulsar://127.0.0.1:{port}", listener_name="nope", operation_timeout_seconds=3,
                               logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
        began = time.monotonic()
        with pytest.raises(pulsar.PulsarException):
            client.create_producer("via-nowhere")
        assert time.monotonic() - began < 15          # refused, retried within the operation timeout: no hang
        client.close()
    finally:
        server.stop()
