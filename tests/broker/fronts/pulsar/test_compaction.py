"""Topic compaction derived from the log (issue 41, item 8): compaction triggered through the
REST API (and its status) or past a topic's threshold; readCompacted readers and
consumers see the latest message per key below the compaction horizon and everything
after it; an empty payload removes its key, a message without a key is not kept; a
batch keeps the indexes that are latest; after a restart the same view is worked out
from the records again."""
from __future__ import annotations

import pytest

from rocketmq_emulator.broker.fronts.pulsar import schema as s
from tests.broker.fronts.pulsar.raw import call, command, connected
from tests.support.pulsar_http import client_of, http, serve_pulsar

pulsar = pytest.importorskip("pulsar", reason="needs pulsar-client: ./dev test installs it")
TOPIC = "/admin/v2/persistent/public/default/prices"


def read_compacted(client, topic="prices"):
    reader = client.create_reader(topic, pulsar.MessageId.earliest, is_read_compacted=True)
    out = []
    while reader.has_message_available():
        m = reader.read_next(5000)
        out.append((m.partition_key(), m.data()))
    reader.close()
    return out


@pytest.mark.interop
def test_compaction_through_rest_keeps_the_latest_value_per_key_and_survives_a_restart(tmp_path):
    server = serve_pulsar(tmp_path / "store")
    try:
        client = client_of(server)
        p = client.create_producer("prices")
        for key, value in (("eur", b"1.10"), ("usd", b"1.00"), ("eur", b"1.12"), ("gbp", b"0.85"), ("usd", b""),
                           (None, b"no key")):
            p.send(value, partition_key=key) if key else p.send(value)
        assert http(server.http_port, "GET", TOPIC + "/compaction") == (200, {"status": "NOT_RUN", "lastError": ""})
        assert http(server.http_port, "PUT", TOPIC + "/compaction") == (204, None)
        assert http(server.http_port, "GET", TOPIC + "/compaction") == (200, {"status": "SUCCESS", "lastError": ""})
        assert read_compacted(client) == [("eur", b"1.12"), ("gbp", b"0.85")]
        p.send(b"1.13", partition_key="eur")                       # past the horizon: read as it is
        assert read_compacted(client) == [("eur", b"1.12"), ("gbp", b"0.85"), ("eur", b"1.13")]
        everything = client.create_reader("prices", pulsar.MessageId.earliest)
        assert sum(1 for _ in iter(lambda: everything.has_message_available() and everything.read_next(5000),
                                   False)) == 7
        consumer = client.subscribe("prices", "latest-only", is_read_compacted=True,
                                    initial_position=pulsar.InitialPosition.Earliest)
        assert [consumer.receive(5000).data() for _ in range(3)] == [b"1.12", b"0.85", b"1.13"]
        consumer.close()
        with pytest.raises(pulsar.InvalidConfiguration):           # (the client refuses it first)
            client.subscribe("prices", "shared", consumer_type=pulsar.ConsumerType.Shared, is_read_compacted=True)
        internal = http(server.http_port, "GET", TOPIC + "/internalStats")[1]
        assert internal["cursors"]["__compaction"]["readPosition"].endswith(":6")
        client.close()
    finally:
        server.stop()
    server = serve_pulsar(tmp_path / "store")                      # the view is worked out again from the log
    try:
        client = client_of(server)
        assert read_compacted(client) == [("eur", b"1.12"), ("gbp", b"0.85"), ("eur", b"1.13")]
        assert http(server.http_port, "GET", TOPIC + "/compaction") == (200, {"status": "SUCCESS", "lastError": ""})
        client.close()
    finally:
        server.stop()


@pytest.mark.interop
def test_a_topic_past_its_compaction_threshold_is_compacted_and_batches_keep_their_latest_indexes(tmp_path):
    server = serve_pulsar(tmp_path / "store")
    try:
        port = server.http_port
        assert http(port, "PUT", "/admin/v2/namespaces/public/default/compactionThreshold", 400) == (204, None)
        client = client_of(server)
        p = client.create_producer("prices", batching_enabled=True, batching_max_messages=3,
                                   batching_max_publish_delay_ms=100)
        done = []
        for key, value in (("eur", b"a"), ("usd", b"b"), ("eur", b"c")):       # one batch of three
            p.send_async(value, lambda res, mid: done.append(res), partition_key=key)
        p.flush()
        assert http(port, "GET", TOPIC + "/compaction")[1]["status"] == "NOT_RUN"      # under 400 bytes so far
        q = client.create_producer("prices")
        for i in range(5):
            q.send(b"x" * 100, partition_key=f"k{i}")
        assert http(port, "GET", TOPIC + "/compaction")[1]["status"] == "SUCCESS"
        assert read_compacted(client)[:2] == [("usd", b"b"), ("eur", b"c")]
        client.close()
    finally:
        server.stop()


def test_raw_frames_read_compacted_is_only_for_exclusive_and_failover_subscriptions():
    front, conn = connected()
    [refused] = call(front, conn, command("SUBSCRIBE", "subscribe", topic="persistent://public/default/x",
                                          subscription="s", subType=s.SubType.Shared, consumer_id=0, request_id=1,
                                          read_compacted=True))
    assert refused.type == s.Type.ERROR and refused.error.error == s.ServerError.NotAllowedError


def _batch(*items):
    """An uncompressed batch's payload: each message's SingleMessageMetadata and payload."""
    out = b""
    for key, payload in items:
        smm = s.SingleMessageMetadata(payload_size=len(payload), partition_key=key).SerializeToString()
        out += len(smm).to_bytes(4, "big") + smm + payload
    return out


def test_a_core_compacts_pulsar_entries_alike_whether_a_pulsar_front_was_built_or_not(tmp_path):
    """Compaction reads the keys of a stored Pulsar entry (a batch's, each message's) the
    same in a core no Pulsar front was ever built for — a restart that serves only the
    REST admin, a program that compacts a copied store — as in one serving Pulsar: the
    entry reader is the core's constructor argument (as serve and EmbeddedBroker build
    it), no front patches it in."""
    from rocketmq_emulator.broker.core import BrokerCore
    from rocketmq_emulator.broker.fronts.pulsar.entries import keys_of
    from rocketmq_emulator.delay_scheduler import VirtualClock
    from tests.broker.fronts.pulsar.raw import producer, send

    core = BrokerCore.open(tmp_path / "store", VirtualClock())
    front, conn = connected(core=core)
    producer(front, conn, "persistent://public/default/prices")
    send(front, conn, 0, 0, _batch(("eur", b"a"), ("usd", b"b"), ("eur", b"c")), num_messages_in_batch=3)
    send(front, conn, 0, 1, b"1.10", partition_key="gbp")
    send(front, conn, 0, 2, b"", partition_key="usd")                 # removes usd
    stored = "pulsar|public|default|prices"
    core.close()

    def compacted(build_front: bool, entry_keys=keys_of):
        reopened = BrokerCore.open(tmp_path / "store", VirtualClock(), entry_keys=entry_keys)
        if build_front:
            connected(core=reopened)
        reopened.compact_pulsar_topic(stored)
        view = reopened.pulsar_compacted_view(stored)
        reopened.close()
        return view

    without_front = compacted(False)
    assert without_front == compacted(True) == (3, {0: 0b100, 1: None})
    # the reader serve and EmbeddedBroker build a core with (the codec loaded at its first call)
    from rocketmq_emulator.broker.fronts.pulsar.entry_keys import pulsar_entry_keys
    assert compacted(False, pulsar_entry_keys()) == without_front
