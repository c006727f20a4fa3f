"""One undecodable record in a pull response (issue 17, item 6, SDK part). Before: the
decode error escaped the pull callback, so that queue was never pulled again (the
reliability test lost 5,462 of 23,000 messages this way) and the error surfaced from
run_until_idle. Upstream's client (MessageDecoder.decodes, 4.9.8) stops decoding the
body at the first bad record, silently, and pulls on from nextBeginOffset: the bad record
and the rest of that batch are never delivered. The SDK logs one ERROR naming the queue
and the record's offset, skips only that record, delivers the others of the batch (by
pulling again right after the bad one when its size cannot be trusted) and moves on."""
import dataclasses
import logging
import struct

import pytest

from rocketmq_emulator.client_sdk import CONSUME_SUCCESS, ConsumeOrderlyStatus, Message
from rocketmq_emulator.store.records import SysFlag, decode_record

POISON = b"poison"


def bad_properties(raw: bytearray, rec) -> None:
    """Properties that are not UTF-8: the record's framing is intact."""
    raw[len(raw) - len(rec.properties_text.encode())] = 0xFF


def bad_size(raw: bytearray, rec) -> None:
    """A total size 7 bytes too large: the records after it cannot be found by it."""
    struct.pack_into(">i", raw, 0, len(raw) + 7)


def bad_size_and_offset(raw: bytearray, rec) -> None:
    """As bad_size, and the queue offset field is garbage too."""
    bad_size(raw, rec)
    struct.pack_into(">q", raw, 20, 987654321)


def not_compressed(raw: bytearray, rec) -> None:
    """Flagged COMPRESSED, but the body is not zlib data."""
    struct.pack_into(">i", raw, 36, rec.sys_flag | SysFlag.COMPRESSED)


def damage_served_records(broker, damage):
    """Every pull from now on serves the POISON record damaged by ``damage``."""
    store = broker.core.store
    real = store.get_message

    def get_message(*args, **kwargs):
        res = real(*args, **kwargs)
        records = []
        for raw in res.records:
            rec = decode_record(raw, check_crc=False)
            if rec.body == POISON:
                raw = bytearray(raw)
                damage(raw, rec)
                raw = bytes(raw)
            records.append(raw)
        return dataclasses.replace(res, records=records)

    store.get_message = get_message


@pytest.mark.parametrize("damage", [bad_properties, bad_size, bad_size_and_offset, not_compressed])
@pytest.mark.parametrize("orderly", [False, True], ids=["concurrently", "orderly"])
def test_an_undecodable_record_is_skipped_and_the_queue_goes_on(rocketmq_broker, rocketmq_producer,
                                                                rocketmq_consumer, time_travel, caplog,
                                                                damage, orderly):
    rocketmq_broker.create_topic("Orders", 1)
    producer = rocketmq_producer()
    bodies = [f"m{i}".encode() for i in range(10)]
    bodies[3] = POISON
    for body in bodies:
        producer.send(Message("Orders", body))
    damage_served_records(rocketmq_broker, damage)
    got = []
    done = ConsumeOrderlyStatus.SUCCESS if orderly else CONSUME_SUCCESS
    with caplog.at_level(logging.INFO, logger="client_sdk"):
        consumer = rocketmq_consumer("g", "Orders", orderly=orderly,
                                     listener=lambda msgs, ctx: got.extend(m.body for m in msgs) or done)
        for i in range(10, 15):                     # later messages keep being delivered
            producer.send(Message("Orders", f"m{i}".encode()))
        time_travel("20s")
    assert got == [b for b in bodies if b != POISON] + [f"m{i}".encode() for i in range(10, 15)]
    errors = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert len(errors) == 1, [r.getMessage() for r in errors]
    text = errors[0].getMessage()
    assert "Orders" in text and "queueId=0" in text and "undecodable" in text
    if damage is not bad_size_and_offset:          # the offset is known only while its field is intact
        assert "offset 3" in text
    assert errors[0].exc_info is None
    assert consumer.stats.as_dict()["undecodable_records"] == 1
    assert rocketmq_broker.committed_offset("g", "Orders", 0) == 15     # not stuck before the bad record


def test_a_batch_of_only_undecodable_records_still_moves_the_offset(rocketmq_broker, rocketmq_producer,
                                                                    rocketmq_consumer, time_travel):
    rocketmq_broker.create_topic("Orders", 1)
    producer = rocketmq_producer()
    producer.send(Message("Orders", POISON))
    damage_served_records(rocketmq_broker, bad_properties)
    got = []
    rocketmq_consumer("g", "Orders", listener=lambda msgs, ctx: got.extend(msgs) or CONSUME_SUCCESS)
    time_travel("20s")
    assert got == []
    assert rocketmq_broker.committed_offset("g", "Orders", 0) == 1


def test_decode_pull_body_skips_each_damaged_record_and_says_where_to_resume():
    from rocketmq_emulator.client_sdk.pull_body import decode_pull_body
    from rocketmq_emulator.store.records import MessageRecord, encode_record

    raws = []
    for i in range(6):
        rec = MessageRecord(topic="Orders", body=f"m{i}".encode(), properties={"TAGS": "A"},
                            born_host=("127.0.0.1", 1), store_host=("127.0.0.1", 2))
        rec.queue_offset = 100 + 2 * i              # gaps: the broker filtered the odd offsets out
        raw = bytearray(encode_record(rec))
        rec = decode_record(raw)
        {1: bad_properties, 3: not_compressed, 5: bad_size}.get(i, lambda raw, rec: None)(raw, rec)
        raws.append(bytes(raw))
    decoded = decode_pull_body(b"".join(raws), 100, 112)
    assert [r.body for r in decoded.records] == [b"m0", b"m2", b"m4"]
    assert [d.queue_offset for d in decoded.damaged] == [102, 106, 110]
    assert decoded.resume_offset == 111
    assert decode_pull_body(b"".join(raws[:5]), 100, 112).resume_offset is None
