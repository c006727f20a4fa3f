"""Sending (rocketmq-4x.md §2.3, §6.2; checklist 19–22, 44, 63–64) and bad input."""
import pytest

from rocketmq_emulator.broker.config import BrokerConfig
from rocketmq_emulator.broker.core import BrokerCore
from rocketmq_emulator.broker.events import EventKind
from rocketmq_emulator.broker.fronts.remoting.protocol import ResponseCode as RC
from rocketmq_emulator.delay_scheduler import VirtualClock
from rocketmq_emulator.store.records import Prop

from tests.support.delay import DEFAULT_MESSAGE_DELAY_LEVEL, levels_of

from .wire import WireClient, read_topic
from tests.support.remoting import front_of


def test_19_send_response_fields(core, client):
    resp = client.send("T", b"hello", tags="TagA")
    assert resp.code == RC.SUCCESS
    ext = resp.ext_fields
    assert set(ext) >= {"msgId", "queueId", "queueOffset", "MSG_REGION", "TRACE_ON"}
    assert (ext["queueId"], ext["queueOffset"], ext["MSG_REGION"], ext["TRACE_ON"]) == ("0", "0", "DefaultRegion", "false")
    rec = core.store.look_message_by_offset(core.store.queue_entry("T", 0, 0)[0])
    assert ext["msgId"] == rec.offset_msg_id
    assert rec.body == b"hello" and rec.properties[Prop.TAGS] == "TagA"
    assert rec.properties[Prop.CLUSTER] == "DefaultCluster"
    assert Prop.WAIT not in rec.properties        # the broker strips WAIT from the stored string


def test_v2_short_header_names_are_accepted(core, client):
    resp = client.send("T", b"v2", tags="TagB", v2=True)
    assert resp.code == RC.SUCCESS
    assert read_topic(core, "T")[0].properties[Prop.TAGS] == "TagB"


def test_v2_header_takes_a_long_name_where_its_short_one_is_absent_and_the_short_one_wins(core, client):
    from rocketmq_emulator.broker.fronts.remoting.protocol import RequestCode
    from rocketmq_emulator.store.records import properties_to_string

    ext = {"a": "PG", "b": "T", "e": "1", "properties": properties_to_string({Prop.TAGS: "Long"}),
           "topic": "Ignored", "bname": "broker-a"}
    resp = client.call(RequestCode.SEND_MESSAGE_V2, ext, b"mixed")
    assert resp.code == RC.SUCCESS and resp.ext_fields["queueId"] == "1"
    [rec] = read_topic(core, "T", 1)
    assert rec.body == b"mixed" and rec.properties[Prop.TAGS] == "Long"
    assert core.topics.get("Ignored") is None
    # a field missing under both names is still the error it was
    resp = client.call(RequestCode.SEND_MESSAGE_V2, {"a": "PG", "b": "T"}, b"x")
    assert resp.code == RC.SYSTEM_ERROR and "queueId" in resp.remark


def test_auto_create_inherits_from_tbw102(core, client):
    client.send("NewTopic", queue_id=2)
    tc = core.topics.get("NewTopic")
    assert (tc.read_queue_nums, tc.write_queue_nums, tc.perm) == (4, 4, 6)


def test_20_missing_retry_topic_is_created_with_one_queue_perm_6():
    core = BrokerCore.in_memory(VirtualClock(), BrokerConfig(auto_create_topic_enable=False))
    client = WireClient(core)
    assert client.send("%RETRY%G", reconsume_times=0).code == RC.SUCCESS
    tc = core.topics.get("%RETRY%G")
    assert (tc.read_queue_nums, tc.write_queue_nums, tc.perm) == (1, 1, 6)


def test_21_missing_topic_without_auto_create_is_17():
    core = BrokerCore.in_memory(VirtualClock(), BrokerConfig(auto_create_topic_enable=False))
    resp = WireClient(core).send("Nope")
    assert resp.code == RC.TOPIC_NOT_EXIST == 17
    assert "not exist" in resp.remark


def test_22_send_to_retry_topic_at_max_goes_to_dlq(core, client):
    resp = client.send("%RETRY%G", reconsume_times=16)
    assert resp.code == RC.SUCCESS
    dlq = read_topic(core, "%DLQ%G")
    assert len(dlq) == 1 and dlq[0].queue_id == 0 and dlq[0].properties[Prop.DELAY] == "0"
    assert core.store.max_offset("%RETRY%G", 0) == 0
    # below the max it stays a retry; the header max applies from version 121
    assert client.send("%RETRY%G", reconsume_times=2, max_reconsume_times=3).code == 0
    assert core.store.max_offset("%RETRY%G", 0) == 1
    assert client.send("%RETRY%G", reconsume_times=3, max_reconsume_times=3).code == 0
    assert len(read_topic(core, "%DLQ%G")) == 2


def test_63_delay_diverts_to_schedule_topic(core, client):
    resp = client.send("T", b"later", delay=3, queue_id=1)
    assert resp.code == RC.SUCCESS
    assert core.store.max_offset("T", 1) == 0
    sched = read_topic(core, "SCHEDULE_TOPIC_XXXX", 2)
    assert len(sched) == 1
    assert sched[0].properties[Prop.REAL_TOPIC] == "T" and sched[0].properties[Prop.REAL_QID] == "1"
    assert core.events.of_kind(EventKind.DELAYED)[0].due_ms == sched[0].store_timestamp + 10_000


def test_64_delay_above_the_table_behaves_like_the_last_level(core, client):
    client.send("T", delay=40)
    sched = read_topic(core, "SCHEDULE_TOPIC_XXXX", 17)
    assert len(sched) == 1 and sched[0].properties[Prop.DELAY] == "18"


@pytest.mark.parametrize("topic, fragment", [
    ("", "blank"),
    ("bad topic", "illegal characters"),
    ("a/b", "illegal characters"),
    ("x" * 128, "longer than topic max length"),
])
def test_illegal_topic_names_are_refused_and_nothing_is_lost(core, client, topic, fragment):
    client.send("T", b"keep")
    before = core.store.commit_log_max_offset
    resp = client.send(topic)
    assert resp.code == RC.SYSTEM_ERROR
    assert fragment in resp.remark
    assert core.store.commit_log_max_offset == before
    assert read_topic(core, "T")[0].body == b"keep"


def test_127_char_topic_is_fine(core, client):
    assert client.send("y" * 127).code == RC.SUCCESS


def test_schedule_topic_is_not_sendable(core, client):
    resp = client.send("SCHEDULE_TOPIC_XXXX")
    assert resp.code == RC.NO_PERMISSION


def test_body_over_max_message_size_is_message_illegal():
    core = BrokerCore.in_memory(VirtualClock(), BrokerConfig(max_message_size=1024))
    client = WireClient(core)
    client.send("T", b"ok")
    resp = client.send("T", b"z" * 1025)
    assert resp.code == RC.MESSAGE_ILLEGAL == 13
    assert [r.body for r in read_topic(core, "T")] == [b"ok"]


def test_44_properties_over_32767_bytes_are_message_illegal(core, client):
    client.send("T", b"ok")
    resp = client.send("T", props={"big": "p" * 33000})
    assert resp.code == RC.MESSAGE_ILLEGAL
    assert len(read_topic(core, "T")) == 1


def test_zero_or_negative_delay_is_stored_at_once_like_upstream(core, client):
    for d in ("0", "-3"):
        assert client.send("T", props={Prop.DELAY: d}).code == RC.SUCCESS
    assert core.store.max_offset("T", 0) == 2


def test_non_numeric_delay_level_is_a_clear_error(core, client):
    client.send("T", b"keep")
    resp = client.send("T", props={Prop.DELAY: "abc"})
    assert resp.code == RC.MESSAGE_ILLEGAL
    assert "delay level" in resp.remark and "abc" in resp.remark
    assert [r.body for r in read_topic(core, "T")] == [b"keep"]


def test_unknown_level_in_the_python_api_raises():
    from rocketmq_emulator.delay_scheduler import DelayLevelError
    with pytest.raises(DelayLevelError, match="unknown delay level 19"):
        levels_of(DEFAULT_MESSAGE_DELAY_LEVEL).delay_ms(19)


def test_queue_id_out_of_range_is_system_error(core, client):
    client.send("T")
    resp = client.send("T", queue_id=99)
    assert resp.code == RC.SYSTEM_ERROR and "queueId" in resp.remark


def test_read_only_broker_refuses_sends(core, client):
    core.set_broker_permission(4)
    assert client.send("T").code == RC.NO_PERMISSION


def test_missing_required_header_is_a_clear_error(core, client):
    from rocketmq_emulator.broker.fronts.remoting.protocol import RemotingCommand, RequestCode
    resp = front_of(core).handle(RemotingCommand.request(RequestCode.SEND_MESSAGE, {"topic": "T"}), client.channel)
    assert resp.code == RC.SYSTEM_ERROR and "producerGroup" in resp.remark


def test_unknown_request_code_is_not_supported_even_oneway(core, client):
    from rocketmq_emulator.broker.fronts.remoting.protocol import RemotingCommand
    resp = front_of(core).handle(RemotingCommand.request(9999, oneway=True), client.channel)
    assert resp.code == RC.REQUEST_CODE_NOT_SUPPORTED == 3
    assert "not supported" in resp.remark
