"""A record is encoded once, when it is appended (DESIGN.md, issue 37): the core keeps
the records it stored as objects (broker/kept_records.py), and a send-back, a delayed
message falling due and a woken long poll use them instead of reading and decoding the
stored bytes again. What they produce must be exactly what the reading path produced:
each test runs the path once as it is, once with the store's read path forbidden, and
once with the kept records withheld (the reading path), and compares the bytes."""
from __future__ import annotations

import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rocketmq_emulator.broker.core import BrokerCore
from rocketmq_emulator.broker.rocketmq_model.delay_queue import ScheduleService
from rocketmq_emulator.broker.kept_records import KeptRecords
from rocketmq_emulator.broker.notifications import PullReady
from rocketmq_emulator.broker.operations import PullOutcome, PullRequest, SendBack, SendRequest
from rocketmq_emulator.delay_scheduler import VirtualClock
from rocketmq_emulator.store.records import decode_record

from .wire import WireClient

G = "G"


def log_bytes(core) -> list[bytes]:
    store, out, offset = core.store, [], core.store.commit_log_min_offset
    while offset < store.commit_log_max_offset:
        raw = store.read(offset)
        out.append(bytes(raw))
        offset += len(raw)
    return out


def as_decoded(rec, props) -> tuple:
    """A kept record's fields, its map as stored in place of its own map."""
    return (rec.topic, rec.body, rec.queue_id, rec.flag, props, rec.sys_flag, rec.born_timestamp,
            tuple(rec.born_host), rec.store_timestamp, tuple(rec.store_host), rec.reconsume_times,
            rec.prepared_transaction_offset, rec.queue_offset, rec.commit_log_offset, rec.body_crc,
            rec.store_size, rec.properties_text)


def decoded(raw: bytes) -> tuple:
    d = decode_record(raw, check_crc=False)
    return as_decoded(d, d.properties)


def forbid_reads(core, monkeypatch):
    def refused(*_a, **_k):
        raise AssertionError("the stored bytes were read again")
    monkeypatch.setattr(core.store, "look_message_by_offset", refused)
    monkeypatch.setattr(core.schedule, "time_up", refused)


def withhold_kept(core, monkeypatch):
    """The reading path: nothing is found kept, nothing is carried to its due time."""
    monkeypatch.setattr(KeptRecords, "get", lambda self, offset: None)
    scheduled = ScheduleService.scheduled
    monkeypatch.setattr(core.schedule, "scheduled",
                        lambda lane, rec, qoff, ms, kept=None: scheduled(core.schedule, lane, rec, qoff, ms, None))


def ladder(monkeypatch, mode: str, props: dict, body: bytes, seed: int = 1) -> BrokerCore:
    """One message sent, then sent back until it is dead-lettered, every retry waiting
    out its delay level: ``mode`` "kept" (the reads forbidden) or "read" (nothing kept)."""
    core = BrokerCore.in_memory(VirtualClock(), rng=random.Random(seed))
    core.create_topic("T", 2)
    ch = core.connect("10.0.0.7:40000")
    if mode == "kept":
        forbid_reads(core, monkeypatch)
    else:
        withhold_kept(core, monkeypatch)
    sent = core.send(SendRequest("PG", "T", body, 1, props, born_timestamp=5), ch)
    offset = core.store.queue_entry("T", 1, sent.queue_offset)[0]
    for _ in range(17):
        result = core.send_back(SendBack(G, offset, 0, 16))
        if result.outcome.name == "DEAD_LETTERED":
            break
        core.advance_clock(3 * 3_600_000)
        retry = core.store.queue_entry("%RETRY%" + G, 0, core.store.max_offset("%RETRY%" + G, 0) - 1)
        offset = retry[0]
    return core


PROPS = [
    {"TAGS": "TagA", "KEYS": "k1 k2", "UNIQ_KEY": "7F00000100002A9F0000000000000001", "WAIT": "true"},
    {"a": "1", "empty": "", "TAGS": "", "x\u0001y": "z", "v": "has\u0001one"},
    {"__CRC32#": "1234567890", "UNIQ_KEY": "U1", "RETRY_TOPIC": ""},
    {},
]


@pytest.mark.parametrize("props", PROPS)
def test_the_ladder_from_kept_records_writes_the_bytes_of_the_reading_path(monkeypatch, props):
    kept = ladder(monkeypatch, "kept", dict(props), b"body" * 20)
    kept._check()
    # every record kept reads as its bytes decode (the map a consumer in process gets)
    found = 0
    for raw in log_bytes(kept):
        entry = kept.kept.get(decode_record(raw).commit_log_offset)
        if entry is not None:
            found += 1
            assert as_decoded(*entry) == decoded(raw)
    assert found == 1 + 16 + 1                              # the send, the due copies, the DLQ copy
    monkeypatch.undo()
    read = ladder(monkeypatch, "read", dict(props), b"body" * 20)
    assert len(log_bytes(kept)) == 1 + 16 * 2 + 1           # the send, 16 retries (+ their due copies), the DLQ
    assert log_bytes(kept) == log_bytes(read)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(props=st.dictionaries(st.sampled_from(["TAGS", "KEYS", "a", "b\u0001", "__CRC32#", "RETRY_TOPIC", "REAL_QID",
                                              "ORIGIN_MESSAGE_ID", "\u00e9"]),
                             st.sampled_from(["", "v", "1", "x\u0001y", "\u4e2d", "-1"]), max_size=6),
       body=st.binary(max_size=64))
def test_a_kept_record_reads_as_its_bytes_decode(monkeypatch, props, body):
    """Whatever a client sent, the kept record with its map as stored is its decode."""
    core = BrokerCore.in_memory(VirtualClock())
    core.create_topic("T", 1)
    ch = core.connect("127.0.0.1:40001")
    res = core.send(SendRequest("PG", "T", body, 0, props), ch)
    if res.outcome.name != "STORED":
        return
    phys = core.store.queue_entry("T", 0, res.queue_offset)[0]
    rec, stored = core.kept.get(phys)
    assert as_decoded(rec, stored) == decoded(core.store.read(phys))


def test_a_woken_long_poll_is_answered_with_the_record_that_woke_it(core, monkeypatch):
    client = WireClient(core)
    client.send("T", b"first")
    assert client.heartbeat(G, ["T"]).code == 0
    answers = []
    core.subscribe(answers.append, (PullReady,))
    context = object()
    mine = core.connect("127.0.0.1:40002", owner="this test")  # (its notifications are no front's)
    assert core.pull_or_hold(PullRequest(G, "T", 0, 1, 32, commit_offset=1), mine, 15_000, context) is None
    reads = []
    get_message = core.store.get_message
    monkeypatch.setattr(core.store, "get_message", lambda *a: reads.append(a) or get_message(*a))
    client.send("T", b"second")
    assert core.store.max_offset("T", 0) == 2 and reads == [] and len(answers) == 1 and answers[0].context is context
    result = answers[0].result
    monkeypatch.undo()
    again = core.pull(PullRequest(G, "T", 0, 1, 32), client.channel)  # what running it again finds
    assert (result.outcome, result.records, result.next_offset, result.min_offset, result.max_offset,
            result.tag_codes, result.store_status) == (again.outcome, again.records, again.next_offset,
                                                       again.min_offset, again.max_offset, again.tag_codes,
                                                       again.store_status)
    [(rec, props)] = result.stored
    assert as_decoded(rec, props) == decoded(result.records[0])


def test_a_woken_pull_whose_checks_now_fail_gets_the_refusal(core):
    client = WireClient(core)
    client.send("T", b"first", queue_id=0)
    assert client.heartbeat(G, ["T"]).code == 0
    answers = []
    core.subscribe(answers.append, (PullReady,))
    mine = core.connect("127.0.0.1:40002", owner="this test")
    assert core.pull_or_hold(PullRequest(G, "T", 0, 1, 32), mine, 15_000, "ctx") is None
    core.groups.find(G).consume_enable = False          # the group may not consume any more
    client.send("T", b"second", queue_id=0)
    assert [a.result.outcome for a in answers] == [PullOutcome.GROUP_NOT_CONSUMABLE]


def test_kept_records_are_bounded_and_a_record_stored_again_is_not_found():
    kept = KeptRecords(limit=3)

    class Rec:
        sys_flag = 0

        def __init__(self, offset):
            self.commit_log_offset = offset
            self.properties_text = "a\u0001b"

    recs = [Rec(i * 100) for i in range(10)]
    for r in recs:
        kept.keep(r)
    assert len(kept) <= 6 and kept.get(900) == (recs[9], {"a": "b"}) and kept.get(0) is None
    recs[9].commit_log_offset = 1000                    # the object went into another put
    assert kept.get(900) is None


def test_the_next_deadline_is_found_once_until_something_changes(core, monkeypatch):
    client = WireClient(core)
    client.send("T", b"later", delay=3)
    scans = []
    find = core._find_deadline
    monkeypatch.setattr(core, "_find_deadline", lambda: scans.append(1) or find())
    first = core.next_deadline()
    assert first == core.clock.now_ms() + 10_000
    for _ in range(5):
        assert core.next_deadline() == first
    assert len(scans) == 1
    client.send("T", b"sooner", delay=1)          # a put changes it
    assert core.next_deadline() == core.clock.now_ms() + 1_000 and len(scans) == 2
    core.advance_clock(1_000)
    assert core.next_deadline() == first
    core._check()
