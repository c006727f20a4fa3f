"""Delivery at an arbitrary timestamp (issue 19 item 3): the same delay path as the
levels, in the timer lane — 5.x delivery_timestamp and Pulsar deliver_at through the
typed send, the TIMER_* properties a 5.x remoting client sets through the 4.x front."""
import json

import pytest

from rocketmq_emulator.broker.config import BrokerConfig
from rocketmq_emulator.broker.core import BrokerCore
from rocketmq_emulator.broker.events import EventKind
from rocketmq_emulator.broker.operations import SendOutcome, SendRequest
from rocketmq_emulator.broker.fronts.remoting.protocol import ResponseCode
from rocketmq_emulator.delay_scheduler import TIMER_LANE, VirtualClock
from rocketmq_emulator.store.records import SCHEDULE_TOPIC, TIMER_TOPIC, Prop

from .wire import WireClient, read_topic


def send_at(core, body, at_ms, topic="T", queue_id=0):
    res = core.send(SendRequest("PG", topic, body, queue_id=queue_id, deliver_at_ms=at_ms), core.connect())
    assert res.outcome is SendOutcome.STORED, res
    return res


def test_a_message_is_delivered_at_its_timestamp_not_before():
    core = BrokerCore.in_memory(VirtualClock())
    t0 = core.clock.now_ms()
    send_at(core, b"later", t0 + 90_000, queue_id=2)
    phys, _, tags = core.store.queue_entry(TIMER_TOPIC, 0, 0)
    assert tags == t0 + 90_000                      # the entry's tagsCode is the delivery time
    assert core.next_deadline() == t0 + 90_000
    core.advance_clock(89_999)
    assert core.store.max_offset("T", 2) == 0
    core.advance_clock(1)
    [rec] = read_topic(core, "T", 2)
    assert rec.body == b"later" and rec.queue_id == 2
    assert rec.properties[Prop.TIMER_DELIVER_MS] == str(t0 + 90_000)   # what a 5.x front reports
    assert rec.properties[Prop.REAL_TOPIC] == "T"
    core.advance_clock(3_600_000)                   # not delayed a second time
    assert core.store.max_offset("T", 2) == 1 and core.schedule.scheduler.pending_count() == 0
    assert [(e.kind, e.delay_level, e.due_ms) for e in core.events] == [
        (EventKind.DELAYED, TIMER_LANE, t0 + 90_000), (EventKind.REDELIVERED, 0, None)]
    core._check()


def test_timestamps_in_any_order_come_out_in_time_order_among_levels():
    core = BrokerCore.in_memory(VirtualClock())
    t0 = core.clock.now_ms()
    send_at(core, b"60s", t0 + 60_000)
    send_at(core, b"7s", t0 + 7_000)
    WireClient(core).send("T", b"level 3 (10s)", delay=3)
    send_at(core, b"25s", t0 + 25_000)
    send_at(core, b"2s", t0 + 2_000)
    core.advance_clock(120_000)
    assert [r.body for r in read_topic(core, "T")] == [b"2s", b"7s", b"level 3 (10s)", b"25s", b"60s"]
    assert core.store.max_offset(SCHEDULE_TOPIC, 2) == 1 and core.store.max_offset(TIMER_TOPIC, 0) == 4


def test_a_timestamp_not_in_the_future_is_stored_at_once():
    core = BrokerCore.in_memory(VirtualClock())
    send_at(core, b"now", core.clock.now_ms())
    assert [r.body for r in read_topic(core, "T")] == [b"now"]
    assert core.store.max_offset(TIMER_TOPIC, 0) == 0


@pytest.mark.parametrize("prop, value, delay_ms", [
    (Prop.TIMER_DELIVER_MS, "ABS+45000", 45_000),
    (Prop.TIMER_DELAY_MS, "1500", 1_500),
    (Prop.TIMER_DELAY_SEC, "20", 20_000),
])
def test_a_5x_remoting_clients_timer_properties_delay_the_message(prop, value, delay_ms):
    core = BrokerCore.in_memory(VirtualClock())
    t0 = core.clock.now_ms()
    if value.startswith("ABS+"):
        value = str(t0 + int(value[4:]))
    reply = WireClient(core).send("T", b"timed", props={prop: value})
    assert reply.code == ResponseCode.SUCCESS
    core.advance_clock(delay_ms - 1)
    assert core.store.max_offset("T", 0) == 0
    core.advance_clock(1)
    [rec] = read_topic(core, "T")
    assert rec.body == b"timed" and rec.properties[Prop.TIMER_DELIVER_MS] == str(t0 + delay_ms)


@pytest.mark.parametrize("props, words", [
    ({Prop.TIMER_DELIVER_MS: "soon"}, "whole number"),
    ({Prop.TIMER_DELAY_SEC: str(3 * 24 * 3600 + 1)}, "timerMaxDelaySec"),
])
def test_a_bad_timer_property_is_refused_and_nothing_is_stored(props, words):
    core = BrokerCore.in_memory(VirtualClock())
    c = WireClient(core)
    assert c.send("T", b"kept").code == ResponseCode.SUCCESS
    reply = c.send("T", b"bad", props=props)
    assert reply.code == ResponseCode.MESSAGE_ILLEGAL and words in reply.remark
    core.advance_clock(4 * 24 * 3600 * 1000)
    assert [r.body for r in read_topic(core, "T")] == [b"kept"]


def test_the_timer_max_delay_is_configurable():
    core = BrokerCore.in_memory(VirtualClock(), BrokerConfig(timer_max_delay_sec=10))
    res = core.send(SendRequest("PG", "T", b"x", deliver_at_ms=core.clock.now_ms() + 10_001), core.connect())
    assert res.outcome is SendOutcome.TIMER_ILLEGAL
    send_at(core, b"ok", core.clock.now_ms() + 10_000)


def test_a_level_wins_over_timer_properties_as_on_a_4x_broker():
    core = BrokerCore.in_memory(VirtualClock())
    c = WireClient(core)
    c.send("T", b"both", delay=1, props={Prop.TIMER_DELAY_SEC: "100"})
    core.advance_clock(1000)
    assert [r.body for r in read_topic(core, "T")] == [b"both"]
    assert core.store.max_offset(TIMER_TOPIC, 0) == 0


def test_reopen_delivers_each_timer_message_once_after_out_of_order_deliveries(tmp_path):
    clock = VirtualClock()
    core = BrokerCore.open(tmp_path, clock)
    t0 = clock.now_ms()
    for body, after in ((b"a 50s", 50_000), (b"b 10s", 10_000), (b"c 30s", 30_000), (b"d 20s", 20_000)):
        send_at(core, body, t0 + after)
    core.advance_clock(25_000)                  # b and d delivered: offsets 1 and 3, out of order
    core._check()
    core.close()
    doc = json.loads((tmp_path / "config" / "timerProgress.json").read_text())
    assert doc == {"floor": 0, "delivered": [1, 3]}

    again = BrokerCore.open(tmp_path, clock)
    assert again.schedule.scheduler.pending_count(TIMER_LANE) == 2
    assert again.next_deadline() == t0 + 30_000
    again.advance_clock(30_000)
    assert [r.body for r in read_topic(again, "T")] == [b"b 10s", b"d 20s", b"c 30s", b"a 50s"]
    again._check()
    again.close()
    doc = json.loads((tmp_path / "config" / "timerProgress.json").read_text())
    assert doc == {"floor": 4, "delivered": []}


def test_a_dead_lettered_copy_is_never_timer_delayed():
    core = BrokerCore.in_memory(VirtualClock())
    c = WireClient(core)
    c.heartbeat("G", ["T"])
    reply = c.send("%RETRY%G", b"poison", reconsume_times=17, max_reconsume_times=16,
                   props={Prop.TIMER_DELAY_SEC: "60"})
    assert reply.code == ResponseCode.SUCCESS
    assert [r.body for r in read_topic(core, "%DLQ%G")] == [b"poison"]
