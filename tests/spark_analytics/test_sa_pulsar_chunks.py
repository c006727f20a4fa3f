"""Pulsar traffic of issue 41 through the analytics (issue 41): a chunked message is one
message (its last chunk's record; the chunks before it are *other*), a chunked dead letter
one dead letter, a deduplicated resend nothing at all — and Spark's analyze counts the
store as the accounting the simulator uses does."""
from __future__ import annotations

import json

import pytest

pytest.importorskip("google_crc32c", reason="needs the pulsar extra: ./dev test installs it")

from rocketmq_emulator.broker.config import BrokerConfig  # noqa: E402
from rocketmq_emulator.broker.core import BrokerCore  # noqa: E402
from rocketmq_emulator.broker.fronts.pulsar import schema as s  # noqa: E402
from rocketmq_emulator.broker.pulsar_model.names import ledger_id
from rocketmq_emulator.delay_scheduler import VirtualClock  # noqa: E402
from rocketmq_emulator.spark_analytics import datasource  # noqa: E402
from rocketmq_emulator.spark_analytics.report import analyze_snapshot  # noqa: E402
from rocketmq_emulator.store import MessageStore  # noqa: E402
from rocketmq_emulator.store.accounting import account_message_store  # noqa: E402
from rocketmq_emulator.store.snapshot import take_snapshot  # noqa: E402
from tests.broker.fronts.pulsar.raw import call, command, connected, producer, send  # noqa: E402
from tests.support.wall import wall_ms  # noqa: E402

pytestmark = pytest.mark.spark
COUNTS = ("produced", "succeeded", "dead_lettered", "send_backs")
T = "persistent://public/default/orders"


def chunked(front, conn, producer_id, sequence_id, body, chunks, uuid, props=()):
    size = -(-len(body) // chunks)
    for i in range(chunks):
        [r] = send(front, conn, producer_id, sequence_id, body[i * size:(i + 1) * size], send_fields={"is_chunk": True},
                   uuid=uuid, chunk_id=i, num_chunks_from_msg=chunks, total_chunk_msg_size=len(body),
                   properties=list(props))
        assert r.type == s.Type.SEND_RECEIPT


def test_chunks_dead_letters_and_deduplicated_resends_count_as_messages_in_spark_and_the_accounting(
        spark, tmp_path, monkeypatch):
    config = BrokerConfig(pulsar_max_message_size=4096, broker_deduplication_enabled=True)
    core = BrokerCore.open(tmp_path / "store", VirtualClock(), config)
    front, conn = connected(core=core)
    producer(front, conn, T, producer_name="app")
    chunked(front, conn, 0, 0, b"a" * 9000, 3, "app-0")                  # offsets 0-2: consumed
    chunked(front, conn, 0, 1, b"b" * 9000, 3, "app-1")                  # offsets 3-5: dead-lettered
    chunked(front, conn, 0, 1, b"b" * 9000, 3, "app-1")                  # a resend: deduplicated, not stored
    send(front, conn, 0, 2, b"small")                                    # offset 6: consumed
    call(front, conn, command("SUBSCRIBE", "subscribe", topic=T, subscription="billing", subType=s.SubType.Shared,
                              consumer_id=0, request_id=2, initialPosition=s.InitialPosition.Earliest))
    call(front, conn, command("FLOW", "flow", consumer_id=0, messagePermits=100))
    front.pump()
    producer(front, conn, T + "-billing-DLQ", producer_id=1, request_id=3)
    kv = s.message("KeyValue")
    chunked(front, conn, 1, 0, b"b" * 9000, 3, "dlq-0",
            [kv(key="REAL_TOPIC", value=T), kv(key="ORIGIN_MESSAGE_ID", value=f"({ledger_id(core_topic())},5,-1,-1)")])
    call(front, conn, command("ACK", "ack", consumer_id=0, ack_type=s.AckType.Individual,
                              message_id=[{"ledgerId": 0, "entryId": e} for e in range(7)]))
    core.close()
    with MessageStore(tmp_path / "store") as store:
        accounts = account_message_store(store)
    assert (accounts.produced, accounts.succeeded, accounts.dead_lettered) == (3, 2, 1)
    take_snapshot(tmp_path / "store", tmp_path / "snap", wall_ms=wall_ms)
    monkeypatch.setattr(datasource, "LOCAL_READ_MAX_BYTES", 0)
    summary = analyze_snapshot(str(tmp_path / "snap"), str(tmp_path / "report"), spark=spark)
    assert {k: summary[k] for k in COUNTS} == {k: accounts.summary()[k] for k in COUNTS}
    assert json.loads((tmp_path / "report" / "summary.json").read_text())["produced"] == 3


def core_topic() -> str:
    return "pulsar|public|default|orders"
