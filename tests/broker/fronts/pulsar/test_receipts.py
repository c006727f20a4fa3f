"""SEND_RECEIPT as Pulsar writes it, for every producer of a connection: its producer id,
the SEND's sequence id, the stored entry's id, and the highest sequence id only when the
SEND carried one (a batch), byte for byte as a receipt built field by field (a front that
frames receipts its own way, to spend less per SEND, must still write these bytes)."""
from __future__ import annotations

import pytest

pytest.importorskip("google_crc32c", reason="needs the pulsar extra: ./dev test installs it")

from rocketmq_emulator.broker.fronts.pulsar import schema as s  # noqa: E402
from rocketmq_emulator.broker.fronts.pulsar.frames import FrameDecoder, encode_payload  # noqa: E402
from rocketmq_emulator.broker.pulsar_model.names import ledger_id
from tests.broker.fronts.pulsar.raw import command, connected, producer  # noqa: E402


def raw_send(front, conn, producer_id, sequence_id, highest=None) -> bytes:
    fields = {"producer_id": producer_id, "sequence_id": sequence_id}
    if highest is not None:
        fields["highest_sequence_id"] = highest
    meta = s.MessageMetadata(producer_name=f"p{producer_id}", sequence_id=sequence_id, publish_time=1)
    [frame] = FrameDecoder().feed(encode_payload(command("SEND", "send", **fields).SerializeToString(),
                                                 meta.SerializeToString(), b"body"))
    [reply] = front.handle(conn, frame)
    return reply


def expected(producer_id, sequence_id, ledger, entry, highest=None) -> bytes:
    cmd = s.BaseCommand(type=s.Type.SEND_RECEIPT)
    r = cmd.send_receipt
    r.producer_id, r.sequence_id = producer_id, sequence_id
    r.message_id.ledgerId, r.message_id.entryId = ledger, entry
    if highest:
        r.highest_sequence_id = highest
    body = cmd.SerializeToString()
    return (len(body) + 4).to_bytes(4, "big") + len(body).to_bytes(4, "big") + body


def test_receipts_carry_their_own_producer_sequence_and_entry_and_a_batchs_highest_id_only():
    front, conn = connected()
    producer(front, conn, "persistent://public/default/a", producer_id=3, request_id=1, producer_name="p3")
    producer(front, conn, "persistent://public/default/b", producer_id=700, request_id=2, producer_name="p700")
    ledger_a, ledger_b = ledger_id("pulsar|public|default|a"), ledger_id("pulsar|public|default|b")
    assert raw_send(front, conn, 3, 0) == expected(3, 0, ledger_a, 0)
    assert raw_send(front, conn, 3, 1, highest=9) == expected(3, 1, ledger_a, 1, highest=9)     # a batch of 1..9
    assert raw_send(front, conn, 3, 10) == expected(3, 10, ledger_a, 2)                        # no highest id now
    assert raw_send(front, conn, 700, 300) == expected(700, 300, ledger_b, 0)
    assert raw_send(front, conn, 3, 1 << 40) == expected(3, 1 << 40, ledger_a, 3)
    [receipt] = [s.BaseCommand.FromString(f.command) for f in FrameDecoder().feed(raw_send(front, conn, 700, 301))]
    assert not receipt.send_receipt.HasField("highest_sequence_id")
    assert (receipt.send_receipt.producer_id, receipt.send_receipt.message_id.entryId) == (700, 1)
