"""Sequence ids and deduplication (issue 41, item 4): PRODUCER_SUCCESS carries the last
sequence id stored for the producer's name, so a producer that comes back under that name
goes on from it; with deduplication on (a namespace or topic policy, or broker.conf's
brokerDeduplicationEnabled) a resent sequence id is acknowledged and not stored twice —
across a restart and a kill -9, as Pulsar's deduplication cursor is durable; the
store's accounting counts the message once."""
from __future__ import annotations

import pytest

from rocketmq_emulator.store import MessageStore
from rocketmq_emulator.store.accounting import account_message_store
from tests.support.pulsar_http import client_of, http, serve_pulsar

pulsar = pytest.importorskip("pulsar", reason="needs pulsar-client: ./dev test installs it")
pytestmark = pytest.mark.interop
NO_ID = -1                                  # a duplicate's message id: (-1, -1), as Pulsar answers


def read_all(client, topic):
    reader = client.create_reader(topic, pulsar.MessageId.earliest)
    out = []
    while reader.has_message_available():
        out.append(reader.read_next(5000).data())
    reader.close()
    return out


def test_a_producer_that_comes_back_under_its_name_goes_on_from_its_last_sequence_id(tmp_path):
    server = serve_pulsar(tmp_path / "store")
    try:
        client = client_of(server)
        p = client.create_producer("seq", producer_name="orders-app")
        assert p.last_sequence_id() == -1
        for i in range(3):
            p.send(b"s%d" % i)
        assert p.last_sequence_id() == 2
        p.close()
        again = client.create_producer("seq", producer_name="orders-app")
        assert again.last_sequence_id() == 2                   # from PRODUCER_SUCCESS
        again.send(b"s3")
        assert again.last_sequence_id() == 3
        client.close()
    finally:
        server.stop()
    server = serve_pulsar(tmp_path / "store")                  # a restart: read back from the store
    try:
        client = client_of(server)
        assert client.create_producer("seq", producer_name="orders-app").last_sequence_id() == 3
        assert client.create_producer("seq", producer_name="someone-else").last_sequence_id() == -1
        client.close()
    finally:
        server.stop()


def test_with_deduplication_on_a_resend_is_acknowledged_and_not_stored_again_across_a_kill(tmp_path):
    server = serve_pulsar(tmp_path / "store")
    try:
        port = server.http_port
        assert http(port, "PUT", "/admin/v2/tenants/dd", {}) == (204, None)
        assert http(port, "PUT", "/admin/v2/namespaces/dd/ns") == (204, None)
        assert http(port, "POST", "/admin/v2/namespaces/dd/ns/deduplication", True) == (204, None)
        client = client_of(server)
        p = client.create_producer("persistent://dd/ns/payments", producer_name="payer")
        ids = [p.send(b"pay-%d" % i, sequence_id=i) for i in range(3)]
        assert all(m.ledger_id() != NO_ID for m in ids)
        dup = p.send(b"pay-1 again", sequence_id=1)             # e.g. a resend after a timeout
        assert (dup.ledger_id(), dup.entry_id()) == (NO_ID, NO_ID)
        assert read_all(client, "persistent://dd/ns/payments") == [b"pay-0", b"pay-1", b"pay-2"]
        stats = http(port, "GET", "/admin/v2/persistent/dd/ns/payments/stats")[1]
        assert stats["deduplicationStatus"] == "Enabled" and stats["msgInCounter"] == 3
        # a topic elsewhere is not deduplicated
        other = client.create_producer("not-dedup", producer_name="payer")
        other.send(b"a", sequence_id=5)
        assert other.send(b"a again", sequence_id=5).ledger_id() != NO_ID
        client.close()
    finally:
        server.kill()                            # kill -9: nothing flushed since the sends
    server = serve_pulsar(tmp_path / "store")
    try:
        client = client_of(server)
        p = client.create_producer("persistent://dd/ns/payments", producer_name="payer")
        assert p.last_sequence_id() == 2
        dup = p.send(b"pay-2 again", sequence_id=2)
        assert (dup.ledger_id(), dup.entry_id()) == (NO_ID, NO_ID)
        p.send(b"pay-3")
        assert read_all(client, "persistent://dd/ns/payments") == [b"pay-0", b"pay-1", b"pay-2", b"pay-3"]
        # the topic's own policy turns it off for that topic
        assert http(server.http_port, "POST", "/admin/v2/persistent/dd/ns/payments/deduplicationEnabled",
                    False) == (204, None)
        assert p.send(b"pay-3 again", sequence_id=3).ledger_id() != NO_ID
        client.close()
    finally:
        server.stop()
    with MessageStore(tmp_path / "store") as store:
        counts = account_message_store(store)
    assert counts.produced_by_topic["pulsar|dd|ns|payments"] == 5       # the deduplicated resends: not at all


def test_broker_conf_turns_deduplication_on_for_every_topic(tmp_path):
    server = serve_pulsar(tmp_path / "store", conf="brokerDeduplicationEnabled=true\n")
    try:
        client = client_of(server)
        p = client.create_producer("everywhere", producer_name="p1")
        p.send(b"once", sequence_id=10)
        assert p.send(b"twice", sequence_id=10).ledger_id() == NO_ID
        assert p.send(b"older", sequence_id=7).ledger_id() == NO_ID
        assert read_all(client, "everywhere") == [b"once"]
        client.close()
    finally:
        server.stop()
