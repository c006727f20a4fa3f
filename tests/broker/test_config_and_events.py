"""broker.conf keys, and the event record."""
import pytest

from rocketmq_emulator.broker.config import BrokerConfig, ConfigError, load_broker_conf
from rocketmq_emulator.broker.core import BrokerCore
from rocketmq_emulator.broker.events import EventKind
from rocketmq_emulator.delay_scheduler import VirtualClock

from .wire import WireClient


def test_a_real_broker_conf_is_accepted(tmp_path):
    conf = tmp_path / "broker.conf"
    conf.write_text("# RocketMQ broker.conf\nbrokerClusterName = DefaultCluster\nbrokerName = broker-b\n"
                    "brokerId = 0\ndeleteWhen = 04\nfileReservedTime = 48\nbrokerRole = ASYNC_MASTER\n"
                    "flushDiskType = SYNC_FLUSH\nbrokerPermission=4\nautoCreateTopicEnable=false\n"
                    "messageDelayLevel=1s 2s 3s\n")
    cfg = load_broker_conf(conf)
    assert cfg.broker_name == "broker-b" and cfg.flush_disk_type == "SYNC_FLUSH"
    assert cfg.broker_permission == 4 and cfg.auto_create_topic_enable is False
    assert cfg.delay_levels.max_level == 3
    assert cfg.extra["brokerRole"] == "ASYNC_MASTER"


@pytest.mark.parametrize("key, value, fragment", [
    ("brokerPermission", "lots", "brokerPermission must be an integer"),
    ("autoCreateTopicEnable", "maybe", "autoCreateTopicEnable must be true or false"),
    ("flushDiskType", "SOMETIMES", "flushDiskType"),
    ("messageDelayLevel", "1s 5x", "messageDelayLevel"),
])
def test_bad_conf_values_name_the_key(key, value, fragment):
    with pytest.raises(ConfigError, match=fragment):
        BrokerConfig.from_properties({key: value})


def test_missing_conf_file_is_a_clear_error(tmp_path):
    with pytest.raises(ConfigError, match="cannot read broker config"):
        load_broker_conf(tmp_path / "nope.conf")


def test_event_record_follows_a_message_through_retry_and_dlq():
    core = BrokerCore.in_memory(VirtualClock())
    c = WireClient(core)
    c.send("T", b"x")
    seen = []
    core.events.subscribe(seen.append)
    phys = core.store.queue_entry("T", 0, 0)[0]
    c.send_back(phys, "G", 1)
    core.advance_clock(1000)
    retry_phys = core.store.queue_entry("%RETRY%G", 0, 0)[0]
    c.send_back(retry_phys, "G", -1)
    core.record_offset_commit("G", "T", 0, 1)
    kinds = [e.kind for e in core.events]
    assert kinds == [EventKind.STORED, EventKind.DELAYED, EventKind.SENT_BACK, EventKind.REDELIVERED,
                     EventKind.DEAD_LETTERED, EventKind.OFFSET_COMMITTED]
    assert seen == list(core.events)[1:]
    uniq = core.events[0].msg_id
    assert all(e.msg_id == uniq for e in core.events if e.kind != EventKind.OFFSET_COMMITTED)
    sent = core.events.of_kind(EventKind.SENT_BACK)[0]
    assert (sent.group, sent.delay_level, sent.reconsume_times, sent.real_topic) == ("G", 1, 1, "T")
    assert sent.due_ms == sent.time_ms + 1000


def test_a_subscriber_may_take_some_kinds_and_then_only_those_are_built():
    core = BrokerCore.in_memory(VirtualClock(), BrokerConfig(record_events=False))
    c = WireClient(core)
    assert core.events.wanted == frozenset()
    dead, offsets = [], []
    stop_dead = core.events.subscribe(dead.append, kinds=[EventKind.DEAD_LETTERED])
    core.events.subscribe(offsets.append, kinds=[EventKind.OFFSET_COMMITTED])
    assert core.events.wanted == {EventKind.DEAD_LETTERED, EventKind.OFFSET_COMMITTED}
    c.send("T", b"x")
    phys = core.store.queue_entry("T", 0, 0)[0]
    c.send_back(phys, "G", -1)                       # straight to %DLQ%G
    core.record_offset_commit("G", "T", 0, 1)
    assert [e.kind for e in dead] == [EventKind.DEAD_LETTERED] and dead[0].topic == "%DLQ%G"
    assert [(e.kind, e.queue_offset) for e in offsets] == [(EventKind.OFFSET_COMMITTED, 1)]
    assert len(core.events) == 0                     # nothing kept: record_events is off
    stop_dead()
    assert core.events.wanted == {EventKind.OFFSET_COMMITTED}
    core.events.enabled = True                       # recording again wants every kind
    c.send("T", b"y")
    assert [e.kind for e in core.events] == [EventKind.STORED] and len(dead) == 1


def test_subscribing_to_an_unknown_kind_is_an_error():
    core = BrokerCore.in_memory(VirtualClock())
    with pytest.raises(ValueError, match="unknown event kinds: \\['stord'\\]"):
        core.events.subscribe(print, kinds=["stord"])
