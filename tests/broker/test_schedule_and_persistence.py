"""Delayed delivery (checklist 65–68) and reopening a broker from disk."""
import json

import pytest

from rocketmq_emulator.broker.config import BrokerConfig
from rocketmq_emulator.broker.core import BrokerCore
from rocketmq_emulator.broker.events import EventKind
from rocketmq_emulator.delay_scheduler import VirtualClock
from rocketmq_emulator.store.records import Prop

from .wire import WireClient, read_topic


def test_65_schedule_entry_tags_code_is_the_delivery_time():
    core = BrokerCore.in_memory(VirtualClock())
    WireClient(core).send("T", delay=2)
    phys, size, tags = core.store.queue_entry("SCHEDULE_TOPIC_XXXX", 1, 0)
    rec = core.store.look_message_by_offset(phys)
    assert tags == rec.store_timestamp + 5000


def test_66_67_delivered_no_earlier_than_its_delay_and_not_delayed_again():
    core = BrokerCore.in_memory(VirtualClock(), BrokerConfig(message_delay_level="5s 8s"))
    c = WireClient(core)
    c.send("T", b"body", delay=2, tags="TagA", queue_id=1)
    assert core.next_deadline() == core.clock.now_ms() + 8000
    core.advance_clock(7999)
    assert core.store.max_offset("T", 1) == 0
    core.advance_clock(1)
    [rec] = read_topic(core, "T", 1)
    assert rec.body == b"body" and rec.queue_id == 1 and rec.reconsume_times == 0
    # the stored string still lists DELAY / REAL_TOPIC / REAL_QID (upstream quirk)
    assert rec.properties[Prop.DELAY] == "2" and rec.properties[Prop.REAL_TOPIC] == "T"
    assert rec.properties[Prop.REAL_QID] == "1"
    core.advance_clock(60_000)   # not delayed a second time
    assert core.store.max_offset("T", 1) == 1
    assert core.schedule.scheduler.pending_count() == 0
    assert [e.kind for e in core.events] == [EventKind.DELAYED, EventKind.REDELIVERED]


def test_deliveries_across_levels_come_out_in_time_order():
    core = BrokerCore.in_memory(VirtualClock())
    c = WireClient(core)
    c.send("T", b"30s", delay=4)
    c.send("T", b"1s", delay=1)
    c.send("T", b"10s", delay=3)
    core.advance_clock(60_000)
    assert [r.body for r in read_topic(core, "T")] == [b"1s", b"10s", b"30s"]


def test_68_delay_offsets_persist_and_reopen_resumes(tmp_path):
    clock = VirtualClock()
    core = BrokerCore.open(tmp_path, clock)
    c = WireClient(core)
    c.send("T", b"first", delay=1)
    c.send("T", b"second", delay=3)
    core.advance_clock(1000)
    core.close()
    doc = json.loads((tmp_path / "config" / "delayOffset.json").read_text())
    assert int(doc["offsetTable"]["1"]) == 1 and int(doc["offsetTable"].get("3", 0)) == 0

    reopened = BrokerCore.open(tmp_path, clock)
    assert [r.body for r in read_topic(reopened, "T")] == [b"first"]
    assert reopened.next_deadline() == clock.now_ms() + 9000
    reopened.advance_clock(9000)
    assert [r.body for r in read_topic(reopened, "T")] == [b"first", b"second"]  # each exactly once
    reopened.close()


def test_reopen_restores_messages_offsets_topics_and_groups_byte_identical(tmp_path):
    clock = VirtualClock()
    core = BrokerCore.open(tmp_path, clock)
    c = WireClient(core)
    for i in range(20):
        c.send("T", f"m{i}".encode(), tags="TagA", keys=f"k{i}", queue_id=i % 4)
    c.heartbeat("G", ["T"])
    core.record_offset_commit("G", "T", 0, 3)
    first = core.store.look_message_by_offset(core.store.queue_entry("T", 0, 0)[0])
    c.send_back(first.commit_log_offset, "G", 0)
    before = {q: [core.store.read(core.store.queue_entry("T", q, o)[0]) for o in range(5)] for q in range(4)}
    core.close()

    again = BrokerCore.open(tmp_path, clock)
    after = {q: [again.store.read(again.store.queue_entry("T", q, o)[0]) for o in range(5)] for q in range(4)}
    assert after == before
    assert again.store.query_offset("G", "T", 0) == 3
    assert again.topics.get("%RETRY%G") is not None and again.groups.table["G"].retry_max_times == 16
    assert again.schedule.scheduler.pending_count(3) == 1
    again.advance_clock(10_000)
    assert read_topic(again, "%RETRY%G")[0].body == b"m0"
    again.close()


def test_torn_tail_is_cut_and_the_broker_carries_on(tmp_path):
    clock = VirtualClock()
    core = BrokerCore.open(tmp_path, clock)
    c = WireClient(core)
    c.send("T", b"kept")
    c.send("T", b"torn")
    core.close()
    seg = sorted((tmp_path / "commitlog").iterdir())[-1]
    data = seg.read_bytes()
    seg.write_bytes(data[:-10])          # tear the last record
    again = BrokerCore.open(tmp_path, clock)
    assert [r.body for r in read_topic(again, "T")] == [b"kept"]
    assert WireClient(again).send("T", b"after").code == 0
    assert [r.body for r in read_topic(again, "T")] == [b"kept", b"after"]
    again.close()


@pytest.mark.parametrize("kind_name, parked", [("SENT", True), ("AS_IS", False)])
def test_the_kind_of_put_decides_whether_a_delay_property_parks_it(kind_name, parked):
    # broker/put_kinds.py: a producer's message is diverted by its DELAY property; a put
    # of kind AS_IS (a transaction's half, op record or copy) is stored where it is addressed
    from rocketmq_emulator.broker import put_kinds
    from rocketmq_emulator.store.records import MessageRecord
    core = BrokerCore.in_memory(VirtualClock())
    core.create_topic("Orders", 1)
    rec = MessageRecord("Orders", b"x", 0, 0, {Prop.DELAY: "3"}, 0, 0, ("127.0.0.1", 1), 0, core.store_host, 0)
    core.put_message(rec, getattr(put_kinds, kind_name))
    assert (read_topic(core, "Orders") == [], len(read_topic(core, "SCHEDULE_TOPIC_XXXX", 2))) == (parked, int(parked))
    assert core.events[-1].kind == (EventKind.DELAYED if parked else EventKind.STORED)
