"""CONSUMER_SEND_MSG_BACK against rocketmq-4x.md §5 (checklist 50–61) and the whole
default retry ladder on a VirtualClock."""
import pytest

from rocketmq_emulator.broker.config import BrokerConfig
from rocketmq_emulator.broker.core import BrokerCore
from rocketmq_emulator.broker.events import EventKind
from rocketmq_emulator.broker.fronts.remoting.protocol import ResponseCode as RC
from rocketmq_emulator.delay_scheduler import VirtualClock
from rocketmq_emulator.store.records import Prop

from .wire import WireClient, read_topic

GROUP = "G"


def stored(client, topic="T", **kw):
    resp = client.send(topic, b"payload", tags="TagA", keys="k1 k2", flag=7, **kw)
    assert resp.code == RC.SUCCESS, resp
    return client.core.store.look_message_by_offset(
        client.core.store.queue_entry(topic, int(resp.ext_fields["queueId"]),
                                      int(resp.ext_fields["queueOffset"]))[0])


def test_50_retry_queue_nums_zero_succeeds_and_stores_nothing(core, client):
    msg = stored(client)
    core.groups.find(GROUP).retry_queue_nums = 0
    before = core.store.commit_log_max_offset
    resp = client.send_back(msg.commit_log_offset, GROUP)
    assert resp.code == RC.SUCCESS
    assert core.store.commit_log_max_offset == before
    assert core.topics.get("%RETRY%" + GROUP) is None


def test_51_broker_not_writeable_is_no_permission(core, client):
    msg = stored(client)
    core.set_broker_permission(4)
    resp = client.send_back(msg.commit_log_offset, GROUP)
    assert resp.code == RC.NO_PERMISSION == 16
    assert "sending message is forbidden" in resp.remark


def test_group_missing_is_subscription_group_not_exist():
    core = BrokerCore.in_memory(VirtualClock(), BrokerConfig(auto_create_subscription_group=False))
    client = WireClient(core)
    msg = stored(client)
    resp = client.send_back(msg.commit_log_offset, "nobody")
    assert resp.code == RC.SUBSCRIPTION_GROUP_NOT_EXIST == 26


def test_52_unknown_offset_is_system_error_with_upstream_remark(core, client):
    stored(client)
    before = core.store.commit_log_max_offset
    resp = client.send_back(987654321, GROUP)
    assert resp.code == RC.SYSTEM_ERROR == 1
    assert resp.remark == "look message by offset failed, 987654321"
    assert core.store.commit_log_max_offset == before


def test_53_delay_level_zero_uses_three_plus_reconsume_times(core, client):
    msg = stored(client)
    resp = client.send_back(msg.commit_log_offset, GROUP, 0)
    assert resp.code == RC.SUCCESS
    sched = read_topic(core, "SCHEDULE_TOPIC_XXXX", 2)  # level 3 -> queue 2
    assert len(sched) == 1
    copy = sched[0]
    assert copy.properties[Prop.DELAY] == "3"
    assert copy.reconsume_times == 1
    assert copy.properties[Prop.REAL_TOPIC] == "%RETRY%G"
    assert copy.properties[Prop.REAL_QID] == "0"
    # the retry topic exists with upstream's queue count and perm (retryQueueNums 1, RW)
    tc = core.topics.get("%RETRY%G")
    assert (tc.read_queue_nums, tc.write_queue_nums, tc.perm) == (1, 1, 6)


def test_53_level_capped_at_the_last_queue(core, client):
    # reconsumeTimes 16 with a max of 20: level 19 is clamped to 18 (queue 17)
    msg = stored(client, reconsume_times=16)
    resp = client.send_back(msg.commit_log_offset, GROUP, 0, max_reconsume_times=20)
    assert resp.code == RC.SUCCESS
    copy = read_topic(core, "SCHEDULE_TOPIC_XXXX", 17)[0]
    assert copy.properties[Prop.DELAY] == "18"


def test_54_positive_delay_level_is_used_as_given(core, client):
    msg = stored(client)
    assert client.send_back(msg.commit_log_offset, GROUP, 5).code == RC.SUCCESS
    assert len(read_topic(core, "SCHEDULE_TOPIC_XXXX", 4)) == 1


def test_55_negative_delay_level_goes_straight_to_dlq(core, client):
    msg = stored(client)
    assert client.send_back(msg.commit_log_offset, GROUP, -1).code == RC.SUCCESS
    dlq = read_topic(core, "%DLQ%G")
    assert len(dlq) == 1 and dlq[0].queue_id == 0
    assert dlq[0].properties[Prop.DELAY] == "0"


def test_56_reconsume_times_at_max_goes_to_dlq_at_once(core, client):
    msg = stored(client, reconsume_times=16)
    assert client.send_back(msg.commit_log_offset, GROUP, 0).code == RC.SUCCESS
    assert len(read_topic(core, "%DLQ%G")) == 1
    assert core.schedule.scheduler.pending_count() == 0


def test_57_header_max_overrides_only_from_version_121(core, client):
    msg = stored(client, reconsume_times=3)
    # version 120: header ignored, group's retryMaxTimes (16) applies -> retry
    assert client.send_back(msg.commit_log_offset, GROUP, 0, max_reconsume_times=3, version=120).code == 0
    assert core.topics.get("%DLQ%G") is None
    # version 121: header max 3 wins -> DLQ
    assert client.send_back(msg.commit_log_offset, GROUP, 0, max_reconsume_times=3, version=121).code == 0
    assert len(read_topic(core, "%DLQ%G")) == 1


def test_58_dlq_topic_has_one_queue_and_perm_6(core, client):
    msg = stored(client)
    client.send_back(msg.commit_log_offset, GROUP, -1)
    tc = core.topics.get("%DLQ%G")
    assert (tc.read_queue_nums, tc.write_queue_nums, tc.perm) == (1, 1, 6)


def test_59_60_61_retry_topic_origin_id_and_kept_fields(core, client):
    msg = stored(client)
    client.send_back(msg.commit_log_offset, GROUP, 1)
    core.advance_clock(1000)
    first = read_topic(core, "%RETRY%G")[0]
    assert first.properties[Prop.RETRY_TOPIC] == "T"
    assert first.properties[Prop.ORIGIN_MESSAGE_ID] == msg.offset_msg_id
    # second send-back, from the %RETRY% copy
    client.send_back(first.commit_log_offset, GROUP, 1)
    core.advance_clock(1000)
    second = read_topic(core, "%RETRY%G")[1]
    assert second.properties[Prop.RETRY_TOPIC] == "T"           # 59: set once
    assert second.properties[Prop.ORIGIN_MESSAGE_ID] == msg.offset_msg_id  # 60: preserved
    for copy in (first, second):                                  # 61
        assert copy.body == msg.body and copy.flag == msg.flag == 7
        assert copy.sys_flag == msg.sys_flag
        assert copy.born_timestamp == msg.born_timestamp and copy.born_host == msg.born_host
        assert copy.properties[Prop.TAGS] == "TagA" and copy.properties[Prop.KEYS] == "k1 k2"
        assert copy.properties[Prop.UNIQ_KEY] == msg.properties[Prop.UNIQ_KEY]
        assert copy.properties[Prop.WAIT] == "false"
    assert (first.reconsume_times, second.reconsume_times) == (1, 2)


def test_send_back_hook_is_called_after_each_send_back(core, client):
    seen = []
    core.add_send_back_hook(seen.append)
    msg = stored(client)
    client.send_back(msg.commit_log_offset, GROUP, 0, origin_msg_id="U1", origin_topic="T")
    client.send_back(msg.commit_log_offset, GROUP, -1, origin_msg_id="U1", origin_topic="T")
    assert [(c.status, c.success, c.consumer_group, c.topic, c.msg_id) for c in seen] == [
        ("SEND_BACK", True, "G", "T", "U1"), ("SEND_BACK_TO_DLQ", True, "G", "T", "U1")]
    assert seen[0].delay_level == 3 and seen[0].new_topic == "%RETRY%G"


def test_whole_default_ladder_on_a_virtual_clock(core, client):
    """16 send-backs with delayLevel 0; each copy visible no earlier than its level and
    at that time; the 17th failure lands in %DLQ%G with ORIGIN_MESSAGE_ID and RETRY_TOPIC."""
    ladder_s = [10, 30, 60, 120, 180, 240, 300, 360, 420, 480, 540, 600, 1200, 1800, 3600, 7200]
    original = stored(client)
    current = original
    retry_offset = 0
    for i, delay_s in enumerate(ladder_s):
        assert client.send_back(current.commit_log_offset, GROUP, 0).code == RC.SUCCESS
        sent_at = core.clock.now_ms()
        core.advance_clock(delay_s * 1000 - 1)
        assert core.store.max_offset("%RETRY%G", 0) == retry_offset, f"retry {i + 1} visible too early"
        core.advance_clock(1)
        assert core.store.max_offset("%RETRY%G", 0) == retry_offset + 1, f"retry {i + 1} not visible at its time"
        current = read_topic(core, "%RETRY%G")[retry_offset]
        assert current.store_timestamp - sent_at == delay_s * 1000
        assert current.reconsume_times == i + 1
        retry_offset += 1
    # the 17th failure
    assert client.send_back(current.commit_log_offset, GROUP, 0).code == RC.SUCCESS
    dlq = read_topic(core, "%DLQ%G")
    assert len(dlq) == 1
    assert dlq[0].properties[Prop.ORIGIN_MESSAGE_ID] == original.offset_msg_id
    assert dlq[0].properties[Prop.RETRY_TOPIC] == "T"
    assert dlq[0].reconsume_times == 17
    assert dlq[0].store_timestamp == core.clock.now_ms()   # no extra delay before the DLQ
    total_virtual_s = (core.clock.now_ms() - original.store_timestamp) / 1000
    assert total_virtual_s == sum(ladder_s) == 17140        # 4 h 45 min 40 s
    sent_backs = core.events.of_kind(EventKind.SENT_BACK)
    assert [e.delay_level for e in sent_backs] == list(range(3, 19))
    assert len(core.events.of_kind(EventKind.REDELIVERED)) == 16
    assert len(core.events.of_kind(EventKind.DEAD_LETTERED)) == 1


def test_dlq_keeps_messages_without_any_subscriber(core, client):
    """Pulsar drops dead letters nobody subscribed to; RocketMQ (and we) keep them."""
    msg = stored(client)
    client.send_back(msg.commit_log_offset, GROUP, -1)
    core.advance_clock(30 * 24 * 3600 * 1000)
    assert core.consumers.get(GROUP) is None
    assert len(read_topic(core, "%DLQ%G")) == 1
